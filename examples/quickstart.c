/* quickstart: the label of one sentence from a fine-tuned classifier, through the C API.
 *
 * Build against an installed bertrt (cmake --install build --prefix PREFIX):
 *   export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
 *   cc quickstart.c $(pkg-config --cflags --libs bertrt) -lm \
 *      -Wl,-rpath,$(pkg-config --variable=libdir bertrt) -o quickstart
 * Run:
 *   ./quickstart sst2.brt "a gorgeous, witty movie"
 * prints the label, then each class's probability:
 *   positive
 *     negative 0.0312
 *     positive 0.9688 */
#include <bertrt/bertrt.h>
#include <math.h>
#include <stdio.h>

#define MAX_TOKENS 128 /* [CLS] pieces [SEP]; longer text is truncated */
#define MAX_LABELS 64

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.brt \"a sentence\"\n", argv[0]);
    return 2;
  }
  bertrt_model* model = NULL;
  bertrt_heads heads = {0};
  int32_t ids[MAX_TOKENS], types[MAX_TOKENS];
  size_t n = 0;
  float logits[MAX_LABELS];

  /* Load, tokenize, classify: each call returns BERTRT_OK or says why in bertrt_last_error(). */
  bertrt_status s = bertrt_model_load(argv[1], NULL, &model);
  if (s == BERTRT_OK) s = bertrt_model_heads(model, &heads);
  if (s == BERTRT_OK && (heads.kind != BERTRT_HEAD_SEQUENCE_CLASSIFICATION ||
                         heads.num_labels > MAX_LABELS)) {
    fprintf(stderr, "quickstart: %s is not a sentence classifier\n", argv[1]);
    bertrt_model_free(model);
    return 1;
  }
  if (s == BERTRT_OK)
    s = bertrt_tokenize(model, argv[2], NULL, MAX_TOKENS, ids, types, NULL, NULL, MAX_TOKENS, &n);
  if (s == BERTRT_OK) {
    bertrt_batch batch = {1, (int32_t)n, ids, types, NULL}; /* one row, no padding */
    s = bertrt_classify(model, &batch, logits, MAX_LABELS);
  }
  if (s != BERTRT_OK) {
    fprintf(stderr, "quickstart: %s\n", bertrt_last_error());
    bertrt_model_free(model);
    return 1;
  }

  /* The most probable class's name, then the softmax of the logits. */
  const char* label = NULL;
  int best = 0;
  double sum = 0;
  for (int k = 1; k < heads.num_labels; ++k)
    if (logits[k] > logits[best]) best = k;
  for (int k = 0; k < heads.num_labels; ++k) sum += exp(logits[k] - logits[best]);
  bertrt_model_label(model, best, &label);
  printf("%s\n", label);
  for (int k = 0; k < heads.num_labels; ++k) {
    bertrt_model_label(model, k, &label);
    printf("  %s %.4f\n", label, exp(logits[k] - logits[best]) / sum);
  }
  bertrt_model_free(model);
  return 0;
}
