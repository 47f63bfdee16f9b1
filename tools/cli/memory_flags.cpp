#include "memory_flags.h"

#include <string>

#include "common.h"
#include "core/error.h"

namespace bertrt::cli {

void add_memory_flags(CLI::App* c, MemoryOptions& m, bool pretraining) {
  c->add_flag("--freeze-embeddings", m.freeze_embeddings,
              pretraining ? "keep bert.embeddings.* fixed (so also the MLM decoder, which is tied "
                            "to them)"
                          : "keep bert.embeddings.* fixed")
      ->group("Memory");
  c->add_option("--freeze-layers", m.freeze_layers,
                "keep the bottom K encoder layers fixed, 0 ≤ K ≤ num_hidden_layers (with "
                "--freeze-embeddings, nothing below layer K is back-propagated and no activation "
                "of those layers is kept)")
      ->capture_default_str()
      ->group("Memory");
  c->add_flag("--recompute", m.recompute,
              std::string("activation recomputation: keep only each layer's input, redo its "
                          "forward in the backward (less memory, ~1/3 more compute, same bits)") +
                  (pretraining ? "" : "; not with --qat int8"))
      ->group("Memory");
}

void check_memory_options(const MemoryOptions& m) {
  if (m.freeze_layers < 0) fail_usage("--freeze-layers must be ≥ 0, got {}", m.freeze_layers);
}

}  // namespace bertrt::cli
