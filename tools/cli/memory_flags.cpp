#include "memory_flags.h"

#include "core/error.h"

namespace bertrt::cli {

void add_memory_flags(CLI::App* c, MemoryOptions& m) {
  c->add_flag("--freeze-embeddings", m.freeze_embeddings,
              "keep bert.embeddings.* fixed (in pre-training so also the MLM decoder, which is "
              "tied to them)")
      ->group("Memory");
  c->add_option("--freeze-layers", m.freeze_layers,
                "keep the bottom K encoder layers fixed (with --freeze-embeddings, nothing below "
                "layer K is back-propagated or kept)")
      ->capture_default_str()
      ->group("Memory");
  c->add_flag("--recompute", m.recompute,
              "activation recomputation: keep only each layer's input, redo its forward in the "
              "backward (less memory, ~1/3 more compute, same bits)")
      ->group("Memory");
}

void check_memory_options(const MemoryOptions& m) {
  if (m.freeze_layers < 0) fail("--freeze-layers must be ≥ 0, got {}", m.freeze_layers);
}

}  // namespace bertrt::cli
