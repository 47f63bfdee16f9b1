// GLUE presets and the generic TSV task: every shared GLUE file parses with the official counts
// (data README; label counts from Python's csv-free split of the same files), and bad input gives
// errors naming file and line.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <numeric>

#include "core/error.h"
#include "tasks/tsv_task.h"
#include "test_util.h"

namespace bertrt {
namespace {

std::string glue(const std::string& rel) { return test::data_dir() + "/glue/" + rel; }

template <typename F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no bertrt::Error thrown; expected one mentioning '" << parts.at(0) << "'";
  } catch (const Error& e) {
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
  }
}

std::string write(const test::TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string p = dir.file(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

int count_label(const std::vector<TextExample>& ex, int label) {
  return int(std::count_if(ex.begin(), ex.end(), [&](const auto& e) { return e.label == label; }));
}

struct FileCount {
  const char* task;
  const char* file;
  size_t examples;
  int label1;  // examples with label id 1 (awk count of the label column); -1: regression
};

TEST(GluePresets, EveryFileParsesWithOfficialCounts) {
  const FileCount files[] = {
      {"sst2", "SST-2/train.tsv", 67349, 37569}, {"sst2", "SST-2/dev.tsv", 872, 444},
      {"cola", "CoLA/train.tsv", 8551, 6023},    {"cola", "CoLA/dev.tsv", 1043, 719},
      {"mrpc", "MRPC/train.tsv", 3668, 2474},      {"mrpc", "MRPC/dev.tsv", 408, 279},
      {"stsb", "STS-B/train.tsv", 5749, -1},     {"stsb", "STS-B/dev.tsv", 1500, -1},
      {"rte", "RTE/train.tsv", 2490, 1241},        {"rte", "RTE/dev.tsv", 277, 131},
      {"qnli", "QNLI/dev.tsv", 5463, 2761},
  };
  for (const FileCount& f : files) {
    SCOPED_TRACE(f.file);
    BERTRT_REQUIRE_PATH(glue(f.file));
    const TaskSpec& spec = glue_task(f.task);
    const auto ex = read_glue_tsv(glue(f.file), spec);
    EXPECT_EQ(ex.size(), f.examples);
    EXPECT_EQ(ex[0].text_b.has_value(), spec.is_pair());
    if (f.label1 >= 0) {
      EXPECT_EQ(count_label(ex, 1), f.label1);
    }
    if (spec.regression) {
      for (const auto& e : ex) ASSERT_TRUE(e.target >= 0 && e.target <= 5 && e.label == -1);
    }
  }
}

TEST(GluePresets, ColumnsLandWhereExpected) {
  BERTRT_REQUIRE_PATH(glue("STS-B/dev.tsv"));
  const auto stsb = read_glue_tsv(glue("STS-B/dev.tsv"), glue_task("stsb"));
  EXPECT_EQ(stsb[0].text_a, "A man with a hard hat is dancing.");
  EXPECT_EQ(*stsb[0].text_b, "A man wearing a hard hat is dancing.");
  EXPECT_FLOAT_EQ(stsb[0].target, 5.0f);
  double sum = 0;  // Python: sum(float(score)) over dev = 3545.86133...
  for (const auto& e : stsb) sum += e.target;
  EXPECT_NEAR(sum, 3545.8613333, 1e-3);  // float targets: 1500 × ~1e-7 relative rounding

  const auto cola = read_glue_tsv(glue("CoLA/dev.tsv"), glue_task("cola"));
  EXPECT_EQ(cola[0].text_a, "The sailors rode the breeze clear of the rocks.");
  EXPECT_EQ(cola[0].label, 1);
  const auto mrpc = read_glue_tsv(glue("MRPC/dev.tsv"), glue_task("mrpc"));  // BOM header
  EXPECT_EQ(mrpc[0].text_a.rfind("He said the foodservice pie business", 0), 0u);
  EXPECT_EQ(mrpc[0].text_b->rfind("\"The foodservice pie business does not fit", 0), 0u);
  const auto rte = read_glue_tsv(glue("RTE/dev.tsv"), glue_task("rte"));
  EXPECT_EQ(*rte[0].text_b, "Christopher Reeve had an accident.");
  EXPECT_EQ(rte[0].label, 1);  // file "1" = not_entailment
  EXPECT_EQ(glue_task("rte").labels[1], "not_entailment");
  const auto qnli = read_glue_tsv(glue("QNLI/dev.tsv"), glue_task("qnli"));
  EXPECT_EQ(qnli[0].text_a, "What came into force after the new constitution was herald?");
  EXPECT_EQ(qnli[0].label, 0);  // entailment
}

TEST(GluePresets, MetricsPerTask) {
  EXPECT_EQ(glue_task("sst2").metrics, (std::vector<std::string>{"accuracy"}));
  EXPECT_EQ(glue_task("cola").metrics, (std::vector<std::string>{"matthews_correlation"}));
  EXPECT_EQ(glue_task("mrpc").metrics, (std::vector<std::string>{"accuracy", "f1"}));
  EXPECT_EQ(glue_task("stsb").metrics, (std::vector<std::string>{"pearson", "spearmanr"}));
  EXPECT_EQ(glue_task("rte").metrics, (std::vector<std::string>{"accuracy"}));
  EXPECT_EQ(glue_task("qnli").metrics, (std::vector<std::string>{"accuracy"}));
  EXPECT_EQ(glue_task_names(), (std::vector<std::string>{"sst2", "cola", "mrpc", "stsb", "rte", "qnli"}));
}

TEST(GluePresets, BadInputNamesFileAndLine) {
  test::TempDir dir;
  const std::string rte_h = "sentence1\tsentence2\tlabel\tidx\n";
  const std::string qnli_h = "index\tquestion\tsentence\tlabel\n";
  auto fails = [&](const std::string& task, const std::string& name, const std::string& bytes,
                   std::vector<std::string> parts) {
    SCOPED_TRACE(name);
    const std::string p = write(dir, name, bytes);
    parts.insert(parts.begin(), p);
    expect_error([&] { read_glue_tsv(p, glue_task(task)); }, parts);
  };
  fails("qnli", "label.tsv", qnli_h + "0\tq?\ts.\tentailment\n1\tq?\ts.\tcontradiction\n",
        {"line 3", "label 'contradiction' is not one of {entailment, not_entailment}"});
  fails("rte", "rte_label.tsv", rte_h + "a\tb\t2\t0\n", {"line 2", "label '2' is not one of {0, 1, "});
  // A pair task given single sentences: the second column is missing (or empty).
  fails("rte", "single.tsv", rte_h + "A man sleeps.\t0\n",
        {"line 2", "expected 4 tab-separated fields", "got 2", "takes sentence pairs"});
  fails("qnli", "empty_b.tsv", qnli_h + "0\tq?\t\tentailment\n",
        {"line 2", "column 'sentence'", "second sentence", "empty"});
  fails("cola", "cola_cols.tsv", "gj04\t1\t\tok.\ngj04\t1\tbad.\n",
        {"line 2", "expected 4 tab-separated fields", "got 3"});
  fails("stsb", "score.tsv",
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
        "0\tg\tf\ty\to\ts\ts\ta\tb\t5.5\n",
        {"line 2", "outside [0, 5]"});
  fails("stsb", "score_text.tsv",
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
        "0\tg\tf\ty\to\ts\ts\ta\tb\thigh\n",
        {"line 2", "expected a number", "'high'"});
  // Decimal only: strtod read a hex score (0x3) as 3.
  fails("stsb", "score_hex.tsv",
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
        "0\tg\tf\ty\to\ts\ts\ta\tb\t0x3\n",
        {"line 2", "expected a number", "'0x3'"});
  fails("mrpc", "mrpc_header.tsv", "Quality\t#1 String\t#2 String\n", {"line 1", "header"});
  // UTF-16 (with its byte-order mark, or without: NULs) is named as such.
  fails("sst2", "utf16.tsv", std::string("\xFF\xFEs\0e\0", 6) + "\n",
        {"line 1", "a UTF-16 byte-order mark", "iconv -f utf-16"});
  fails("sst2", "nul.tsv", "sentence\tlabel\n" + std::string("a\0b\t1\n", 6),
        {"line 2", "byte 2 is NUL", "looks like UTF-16"});
  // Byte numbers count the file's bytes, a UTF-8 BOM included (CoLA has no header).
  fails("cola", "bom.tsv", "\xEF\xBB\xBFgj04\t1\t\tcaf\xE9.\n", {"line 1", "byte 15 (0xE9)"});
  // Latin-1 text: the tokenizer would drop the byte and read "caf au lait".
  fails("sst2", "latin1.tsv", "sentence\tlabel\nfine\t1\ncaf\xE9 au lait\t1\n",
        {"line 3", "byte 4 (0xE9) is not UTF-8", "iconv -f latin1"});
  // Both RTE spellings are accepted.
  const auto ok = read_glue_tsv(write(dir, "rte_words.tsv", rte_h + "a\tb\tnot_entailment\t0\na\tb\t0\t1\n"),
                                glue_task("rte"));
  EXPECT_EQ(ok[0].label, 1);
  EXPECT_EQ(ok[1].label, 0);
}

TEST(GenericTsv, ColumnsByNameOrIndex) {
  test::TempDir dir;
  const std::string p = write(dir, "g.tsv", "id\tpremise\thypothesis\tgold\n7\tA.\tB.\tyes\n8\tC.\tD.\tno\n");
  GenericTsvOptions o;
  o.text_column = "premise";
  o.text_pair_column = "2";
  o.label_column = "gold";
  o.labels = parse_label_list("no,yes");
  const TaskSpec t = generic_tsv_task(o, p);
  EXPECT_EQ(t.num_columns, 4);
  EXPECT_EQ(t.text_a_column, 1);
  EXPECT_EQ(t.text_b_column, 2);
  EXPECT_EQ(t.label_column, 3);
  EXPECT_EQ(t.metrics, (std::vector<std::string>{"accuracy", "f1"}));
  const auto ex = read_glue_tsv(p, t);
  ASSERT_EQ(ex.size(), 2u);
  EXPECT_EQ(ex[0].text_a, "A.");
  EXPECT_EQ(*ex[1].text_b, "D.");
  EXPECT_EQ(ex[0].label, 1);
  EXPECT_EQ(ex[1].label, 0);

  // No header, regression, indices.
  const std::string q = write(dir, "r.tsv", "0.5\tgood\n-2\tbad\n");
  GenericTsvOptions r;
  r.has_header = false;
  r.text_column = "1";
  r.label_column = "0";
  r.regression = true;
  const TaskSpec rt = generic_tsv_task(r, q);
  EXPECT_EQ(rt.metrics, (std::vector<std::string>{"pearson", "spearmanr"}));
  const auto rx = read_glue_tsv(q, rt);
  ASSERT_EQ(rx.size(), 2u);
  EXPECT_FLOAT_EQ(rx[1].target, -2.0f);
  EXPECT_EQ(rx[1].text_a, "bad");

  expect_error([&] { read_glue_tsv(write(dir, "g2.tsv", "id\tpremise\thypothesis\tgold\n7\tA.\tB.\tmaybe\n"), t); },
               {"line 2", "label 'maybe' is not one of {no, yes}"});
  GenericTsvOptions bad = o;
  bad.label_column = "label";
  expect_error([&] { generic_tsv_task(bad, p); }, {p, "'label' is not a column", "premise"});
  bad = o;
  bad.text_column = "9";
  expect_error([&] { generic_tsv_task(bad, p); }, {p, "out of range", "4 columns"});
  bad = o;
  bad.regression = true;
  expect_error([&] { generic_tsv_task(bad, p); }, {"exactly one of"});
  // A header that is not UTF-8 is named before its names are matched (its own header: the GLUE
  // presets' fixed headers catch it by comparison).
  const std::string lat =
      write(dir, "lat.tsv", "id\tpr\xE9mise\thypothesis\tgold\n7\tA.\tB.\tyes\n");
  expect_error([&] { generic_tsv_task(o, lat); }, {lat, "line 1", "byte 6 (0xE9) is not UTF-8"});
  bad = r;
  bad.text_column = "text";
  expect_error([&] { generic_tsv_task(bad, q); }, {"no header"});
  expect_error([] { parse_label_list("a,,b"); }, {"empty label"});
}

}  // namespace
}  // namespace bertrt
