// metrics_json / metrics_text: the keys eval --json and finetune's --metrics log write (Hugging
// Face evaluate's names), the per-type objects of seqeval, and the deprecated aliases beside them.
#include "train/metrics_report.h"

#include <gtest/gtest.h>

#include <cmath>

namespace bertrt {
namespace {

TEST(MetricsReport, GlueNamesWithDeprecatedAliases) {
  TaskMetrics cola;
  cola.values = {{"matthews_correlation", 0.25}};
  const nlohmann::json j = metrics_json(cola);
  EXPECT_EQ(j.size(), 2u);
  EXPECT_EQ(j["matthews_correlation"], 0.25);
  EXPECT_EQ(j["matthews"], 0.25);                                // deprecated alias, same value
  EXPECT_EQ(metrics_text(cola), "matthews_correlation 0.2500");  // text: the new name only

  TaskMetrics stsb;
  stsb.values = {{"pearson", 0.5}, {"spearmanr", NAN}, {"combined_score", NAN}};
  const nlohmann::json s = metrics_json(stsb);
  // An undefined correlation (NaN) is written as null, alias included.
  EXPECT_EQ(s.dump(), R"({"combined_score":null,"pearson":0.5,"spearman":null,"spearmanr":null})");

  TaskMetrics squad;  // exact_match / f1 are already evaluate's names: no alias
  squad.values = {{"exact_match", 0.75}, {"f1", 0.8}};
  EXPECT_EQ(metrics_json(squad).size(), 2u);
}

TEST(MetricsReport, SeqevalOverallAndPerType) {
  TaskMetrics ner;
  ner.values = {{"overall_precision", 0.5},
                {"overall_recall", 0.25},
                {"overall_f1", 1.0 / 3},
                {"overall_accuracy", 0.9}};
  ner.groups = {{"LOC", {{"precision", 1.0}, {"recall", 0.5}, {"f1", 2.0 / 3}}, 2},
                {"PER", {{"precision", 0.0}, {"recall", 0.0}, {"f1", 0.0}}, 0}};
  const nlohmann::json j = metrics_json(ner);
  EXPECT_EQ(j["overall_f1"], 1.0 / 3);
  EXPECT_EQ(j["f1"], 1.0 / 3);  // deprecated aliases of the overall scores
  EXPECT_EQ(j["precision"], 0.5);
  EXPECT_EQ(j["recall"], 0.25);
  EXPECT_FALSE(j.contains("accuracy"));
  ASSERT_TRUE(j["LOC"].is_object());
  EXPECT_EQ(j["LOC"]["number"], 2);
  EXPECT_TRUE(j["LOC"]["number"].is_number_integer());  // a count, as evaluate writes it
  EXPECT_EQ(j["LOC"]["recall"], 0.5);
  EXPECT_EQ(j["PER"]["number"], 0);
  EXPECT_EQ(metrics_text(ner),
            "overall_precision 0.5000, overall_recall 0.2500, overall_f1 0.3333, "
            "overall_accuracy 0.9000; LOC f1 0.6667 (2), PER f1 0.0000 (0)");
}

}  // namespace
}  // namespace bertrt
