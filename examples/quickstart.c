/* quickstart: classify one sentence with a fine-tuned model through the C API.
 *
 * Build against an installed bertrt (cmake --install build --prefix PREFIX):
 *   export PKG_CONFIG_PATH=PREFIX/lib/pkgconfig
 *   cc quickstart.c $(pkg-config --cflags --libs bertrt) -lm \
 *      -Wl,-rpath,$(pkg-config --variable=libdir bertrt) -o quickstart
 * Run:
 *   ./quickstart sst2.brt "a gorgeous, witty movie"
 * prints the label and each class's probability:
 *   positive
 *     negative 0.0312
 *     positive 0.9688 */
#include <bertrt/bertrt.h>
#include <math.h>
#include <stdio.h>

#define MAX_TOKENS 128

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.brt \"a sentence\"\n", argv[0]);
    return 2;
  }
  bertrt_model* model = NULL;
  if (bertrt_model_load(argv[1], NULL, &model) != BERTRT_OK) {
    fprintf(stderr, "quickstart: %s\n", bertrt_last_error());
    return 1;
  }
  bertrt_heads heads;
  if (bertrt_model_heads(model, &heads) != BERTRT_OK ||
      heads.kind != BERTRT_HEAD_SEQUENCE_CLASSIFICATION || heads.num_labels > 64) {
    fprintf(stderr, "quickstart: %s is not a sentence classifier\n", argv[1]);
    bertrt_model_free(model);
    return 1;
  }

  /* [CLS] sentence [SEP] as ids: at most MAX_TOKENS, and no more than the model's positions. */
  bertrt_config config;
  bertrt_model_config(model, &config);
  const int32_t max_len =
      config.max_position_embeddings < MAX_TOKENS ? config.max_position_embeddings : MAX_TOKENS;
  int32_t ids[MAX_TOKENS], types[MAX_TOKENS];
  size_t n = 0;
  float logits[64];
  bertrt_status status =
      bertrt_tokenize(model, argv[2], NULL, max_len, ids, types, NULL, NULL, MAX_TOKENS, &n);
  if (status == BERTRT_OK) {
    bertrt_batch batch = {1, (int32_t)n, ids, types, NULL}; /* one row, no padding */
    status = bertrt_classify(model, &batch, logits, (size_t)heads.num_labels);
  }
  if (status != BERTRT_OK) {
    fprintf(stderr, "quickstart: %s\n", bertrt_last_error());
    bertrt_model_free(model);
    return 1;
  }

  /* Softmax over the logits; the label is the most probable class. */
  int best = 0;
  for (int k = 1; k < heads.num_labels; ++k)
    if (logits[k] > logits[best]) best = k;
  double sum = 0;
  for (int k = 0; k < heads.num_labels; ++k) sum += exp((double)logits[k] - logits[best]);
  const char* label = NULL;
  bertrt_model_label(model, best, &label);
  printf("%s\n", label);
  for (int k = 0; k < heads.num_labels; ++k) {
    bertrt_model_label(model, k, &label);
    printf("  %s %.4f\n", label, exp((double)logits[k] - logits[best]) / sum);
  }
  bertrt_model_free(model);
  return 0;
}
