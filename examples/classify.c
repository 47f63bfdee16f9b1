/* classify: label each line of stdin with a fine-tuned sequence-classification model, through
 * the C API of the installed package. Prints what `bertrt predict` prints for such a model:
 *   label<TAB>label0=p0<TAB>label1=p1...
 * Build: cc classify.c $(pkg-config --cflags --libs bertrt) -lm -o classify
 * Usage: classify MODEL.brt [MAX_SEQ_LENGTH] < sentences.txt */
#include <bertrt/bertrt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char* what) {
  fprintf(stderr, "classify: %s: %s\n", what, bertrt_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s MODEL.brt [MAX_SEQ_LENGTH] < lines\n", argv[0]);
    return 2;
  }
  bertrt_model* model = NULL;
  if (bertrt_model_load(argv[1], NULL, &model) != BERTRT_OK) return fail("load");
  bertrt_heads heads;
  bertrt_config config;
  if (bertrt_model_heads(model, &heads) != BERTRT_OK ||
      bertrt_model_config(model, &config) != BERTRT_OK)
    return fail("query");
  if (heads.kind != BERTRT_HEAD_SEQUENCE_CLASSIFICATION) {
    fprintf(stderr, "classify: %s is not a sequence classification model\n", argv[1]);
    return 1;
  }
  int max_len = argc == 3 ? atoi(argv[2]) : 128;
  if (max_len > config.max_position_embeddings) max_len = config.max_position_embeddings;
  const int K = heads.num_labels;
  int32_t* ids = malloc(sizeof(int32_t) * (size_t)max_len);
  int32_t* types = malloc(sizeof(int32_t) * (size_t)max_len);
  float* logits = malloc(sizeof(float) * (size_t)K);
  char line[65536];
  int rc = 0;
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\r\n")] = 0;
    size_t n = 0;
    if (bertrt_tokenize(model, line, NULL, max_len, ids, types, NULL, NULL, (size_t)max_len, &n) !=
        BERTRT_OK) {
      rc = fail("tokenize");
      break;
    }
    bertrt_batch batch = {1, (int32_t)n, ids, types, NULL};
    if (bertrt_classify(model, &batch, logits, (size_t)K) != BERTRT_OK) {
      rc = fail("classify");
      break;
    }
    int best = 0;
    double mx = logits[0], sum = 0;
    for (int k = 1; k < K; ++k)
      if (logits[k] > logits[best]) best = k;
    mx = logits[best];
    for (int k = 0; k < K; ++k) sum += exp((double)logits[k] - mx);
    const char* label = NULL;
    bertrt_model_label(model, best, &label);
    printf("%s", label);
    for (int k = 0; k < K; ++k) {
      bertrt_model_label(model, k, &label);
      printf("\t%s=%.4f", label, exp((double)logits[k] - mx) / sum);
    }
    printf("\n");
  }
  free(ids);
  free(types);
  free(logits);
  bertrt_model_free(model);
  return rc;
}
