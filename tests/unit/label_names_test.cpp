// prediction_labels: the class names `bertrt predict`, the C API and Python print (the model's
// own where it has them, else the task's as Hugging Face datasets names them).
#include <gtest/gtest.h>

#include "tasks/label_names.h"

namespace bertrt {
namespace {

using Names = std::vector<std::string>;

TEST(LabelNames, GenericLabelsAreIdsOrHuggingFaceDefaults) {
  EXPECT_TRUE(generic_labels({"0", "1"}));
  EXPECT_TRUE(generic_labels({"LABEL_0", "LABEL_1", "LABEL_2"}));
  EXPECT_TRUE(generic_labels({"0", "LABEL_1"}));
  EXPECT_FALSE(generic_labels({"1", "0"}));  // ids in another order name the classes
  EXPECT_FALSE(generic_labels({"NEGATIVE", "POSITIVE"}));
  EXPECT_FALSE(generic_labels({"LABEL_1", "LABEL_0"}));
  EXPECT_FALSE(generic_labels({"neg", "pos"}));
}

TEST(LabelNames, TheModelsOwnNamesWin) {
  EXPECT_EQ(prediction_labels({"NEGATIVE", "POSITIVE"}, "sst2"), (Names{"NEGATIVE", "POSITIVE"}));
  EXPECT_EQ(prediction_labels({"neg", "pos", "meh"}, "tsv"), (Names{"neg", "pos", "meh"}));
  EXPECT_EQ(prediction_labels({"O", "B-PER", "I-PER"}, "conll2003"),
            (Names{"O", "B-PER", "I-PER"}));
  EXPECT_EQ(prediction_labels({"NEGATIVE", "POSITIVE"}, ""), (Names{"NEGATIVE", "POSITIVE"}));
}

// The names of the datasets library's glue configs (ClassLabel names).
TEST(LabelNames, GlueTasksNameTheirClasses) {
  EXPECT_EQ(prediction_labels({"0", "1"}, "sst2"), (Names{"negative", "positive"}));
  EXPECT_EQ(prediction_labels({"LABEL_0", "LABEL_1"}, "sst2"), (Names{"negative", "positive"}));
  EXPECT_EQ(prediction_labels({"0", "1"}, "cola"), (Names{"unacceptable", "acceptable"}));
  EXPECT_EQ(prediction_labels({"0", "1"}, "mrpc"), (Names{"not_equivalent", "equivalent"}));
  EXPECT_EQ(prediction_labels({"LABEL_0", "LABEL_1"}, "rte"),
            (Names{"entailment", "not_entailment"}));
  EXPECT_EQ(prediction_labels({"LABEL_0", "LABEL_1"}, "qnli"),
            (Names{"entailment", "not_entailment"}));
  // bertrt's own rte and qnli heads already carry the names.
  EXPECT_EQ(prediction_labels({"entailment", "not_entailment"}, "rte"),
            (Names{"entailment", "not_entailment"}));
}

TEST(LabelNames, NoNamesLeaveTheLabelsAsTheyAre) {
  EXPECT_EQ(prediction_labels({"LABEL_0", "LABEL_1"}, ""), (Names{"LABEL_0", "LABEL_1"}));
  EXPECT_EQ(prediction_labels({"0", "1"}, "tsv"), (Names{"0", "1"}));  // --labels 0,1
  EXPECT_EQ(prediction_labels({"0", "1", "2"}, "sst2"), (Names{"0", "1", "2"}));  // other count
  EXPECT_EQ(prediction_labels({}, "stsb"), Names{});  // regression
  EXPECT_EQ(prediction_labels({"0", "1"}, "no-such-task"), (Names{"0", "1"}));
}

}  // namespace
}  // namespace bertrt
