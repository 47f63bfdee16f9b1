// finetune_on_device: fine-tune a model on a task's training file through the C API of the
// installed package (what `bertrt finetune` does), with a progress line per step, the dev
// metrics, and an atomic save.
// Build: cmake -S examples -B build-examples -DCMAKE_PREFIX_PATH=PREFIX (find_package(bertrt))
// Usage: finetune_on_device MODEL.brt TASK TRAIN DEV OUT.brt [EPOCHS] [MAX_SEQ_LENGTH] [qat]
#include <bertrt/bertrt.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

// Owns a C handle: the model and the trainer are freed whatever path main() leaves by.
template <typename T, void (*Free)(T*)>
struct Handle {
  T* p = nullptr;
  ~Handle() { Free(p); }
};

int fail(const char* what) {
  std::fprintf(stderr, "finetune_on_device: %s: %s\n", what, bertrt_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6 || argc > 9) {
    std::fprintf(stderr,
                 "usage: %s MODEL.brt TASK TRAIN DEV OUT.brt [EPOCHS] [MAX_SEQ_LENGTH] [qat]\n",
                 argv[0]);
    return 2;
  }
  Handle<bertrt_model, bertrt_model_free> model;
  if (bertrt_model_load(argv[1], nullptr, &model.p) != BERTRT_OK) return fail("load");
  bertrt_finetune_options o;
  bertrt_finetune_options_init(&o);  // the CLI's defaults
  o.task = argv[2];
  o.batch_size = 16;
  o.learning_rate = 1e-4f;
  if (argc > 6) o.epochs = std::atoi(argv[6]);
  if (argc > 7) o.max_seq_length = std::atoi(argv[7]);
  if (argc > 8) o.qat = std::string(argv[8]) == "qat";
  Handle<bertrt_trainer, bertrt_trainer_free> trainer;
  if (bertrt_trainer_create(model.p, &o, argv[3], &trainer.p) != BERTRT_OK) return fail("trainer");
  bertrt_trainer_set_progress(
      trainer.p,
      [](const bertrt_step_metrics* m, void*) {
        std::printf("step %lld/%lld epoch %lld loss %.4f lr %.2e %.0f tok/s\n", (long long)m->step,
                    (long long)m->total_steps, (long long)m->epoch, m->loss, m->learning_rate,
                    m->tokens_per_second);
        std::fflush(stdout);
        return 0;  // non-zero would stop training
      },
      nullptr);
  int64_t total = 0;
  bertrt_trainer_total_steps(trainer.p, &total);
  if (bertrt_trainer_step(trainer.p, total, nullptr) != BERTRT_OK) return fail("step");
  std::string json(4096, '\0');
  size_t length = 0;
  if (bertrt_trainer_evaluate(trainer.p, argv[4], json.data(), json.size(), &length) != BERTRT_OK)
    return fail("evaluate");
  json.resize(length - 1);
  std::printf("dev %s\n", json.c_str());
  if (bertrt_trainer_save(trainer.p, argv[5]) != BERTRT_OK) return fail("save");
  std::printf("wrote %s\n", argv[5]);
  return 0;
}
