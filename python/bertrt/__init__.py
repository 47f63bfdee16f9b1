"""bertrt for Python: the C API of libbertrt.so (include/bertrt/bertrt.h) through ctypes, with
NumPy arrays in and out.

    import bertrt
    m = bertrt.Model("sst2.brt")
    m.predict(["a gorgeous, witty movie"])        # [{'label': 'positive', 'probabilities': {...}}]
    out = m.forward(**m.encode(["hello world"]))  # last_hidden_state [B, T, H], pooler_output [B, H]
    bertrt.finetune("pre.brt", "sst2", "train.tsv", "sst2.brt", dev="dev.tsv", epochs=1)
    bertrt.convert("hf_folder/", "model.brt")
    m = bertrt.Model("base.brt", adapter="sst2-lora.brt")  # a LoRA adapter over its base
    m.set_adapter(m.load_adapter("mrpc-lora.brt"))       # another, the base not copied

Errors raise bertrt.Error with the message the CLI prints (it names the argument or file).
A Model may be used from several threads (the forwards are serialized on it); see bertrt.h.
"""
from .api import Adapter, Error, Model, convert, finetune, quantize_embeddings, version

# The module ships with its library (one version number: CMake's project(VERSION)); it is the
# version of the library it loaded.
__version__ = version()
__all__ = ["Adapter", "Error", "Model", "convert", "finetune", "quantize_embeddings", "version",
           "__version__"]
