"""ctypes declarations of include/bertrt/bertrt.h and the library they are bound to.

The library is, in order: $BERTRT_LIBRARY, the installed one (_library_path.py, written by cmake,
holds its path relative to the module), libbertrt.so.0 on the loader's path.
"""
import ctypes
import os

c_int32, c_int64, c_size_t, c_float, c_char_p = (ctypes.c_int32, ctypes.c_int64, ctypes.c_size_t,
                                                  ctypes.c_float, ctypes.c_char_p)
P = ctypes.POINTER


class ModelOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("backend", c_char_p), ("device", c_int32),
                ("num_threads", c_int32), ("verify_checksums", c_int32)]


class Config(ctypes.Structure):
    _fields_ = [(n, c_int32) for n in ("vocab_size", "hidden_size", "num_hidden_layers",
                                      "num_attention_heads", "intermediate_size",
                                      "max_position_embeddings", "type_vocab_size")] + [
                    ("layer_norm_eps", c_float)]


class Heads(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("num_labels", c_int32), ("has_mlm", c_int32),
                ("has_nsp", c_int32), ("int8", c_int32)]


class Batch(ctypes.Structure):
    _fields_ = [("batch_size", c_int32), ("seq_len", c_int32), ("input_ids", P(c_int32)),
                ("token_type_ids", P(c_int32)), ("attention_mask", P(c_int32))]


class FillCandidate(ctypes.Structure):
    _fields_ = [("position", c_int32), ("token_id", c_int32), ("probability", c_float)]


class EmbedOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("dimensions", c_int32), ("normalize", c_int32),
                ("prompt_name", c_char_p), ("prompt", c_char_p), ("pooling", c_char_p),
                ("batch_size", c_int32)]


class FinetuneOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("task", c_char_p), ("text_column", c_char_p),
                ("text_pair_column", c_char_p), ("label_column", c_char_p), ("labels", c_char_p),
                ("regression", c_int32), ("no_header", c_int32), ("epochs", c_int32),
                ("max_steps", c_int64), ("batch_size", c_int32), ("eval_batch_size", c_int32),
                ("max_seq_length", c_int32), ("learning_rate", c_float),
                ("warmup_ratio", c_float), ("weight_decay", c_float), ("seed", ctypes.c_uint64),
                ("group_by_length", c_int32), ("qat", c_int32),
                ("hidden_dropout_prob", c_float), ("attention_probs_dropout_prob", c_float),
                ("freeze_embeddings", c_int32), ("freeze_layers", c_int32), ("recompute", c_int32)]


class StepMetrics(ctypes.Structure):
    _fields_ = [("step", c_int64), ("total_steps", c_int64), ("epoch", c_int64),
                ("loss", ctypes.c_double), ("learning_rate", ctypes.c_double),
                ("grad_norm", ctypes.c_double), ("tokens_per_second", ctypes.c_double),
                ("elapsed_seconds", ctypes.c_double)]


PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int, P(StepMetrics), ctypes.c_void_p)
VP = ctypes.c_void_p
FP = P(c_float)

_SIGNATURES = {
    "bertrt_last_error": (c_char_p, []),
    "bertrt_status_string": (c_char_p, [ctypes.c_int]),
    "bertrt_version": (c_char_p, []),
    "bertrt_model_options_init": (None, [P(ModelOptions)]),
    "bertrt_model_load": (ctypes.c_int, [c_char_p, P(ModelOptions), P(VP)]),
    "bertrt_model_load_buffer": (ctypes.c_int, [c_char_p, c_size_t, P(ModelOptions), P(VP)]),
    "bertrt_model_free": (None, [VP]),
    "bertrt_model_config": (ctypes.c_int, [VP, P(Config)]),
    "bertrt_model_heads": (ctypes.c_int, [VP, P(Heads)]),
    "bertrt_model_label": (ctypes.c_int, [VP, c_int32, P(c_char_p)]),
    "bertrt_model_task": (ctypes.c_int, [VP, P(c_char_p)]),
    "bertrt_model_token": (ctypes.c_int, [VP, c_int32, P(c_char_p)]),
    "bertrt_adapter_load": (ctypes.c_int, [VP, c_char_p, P(VP)]),
    "bertrt_adapter_free": (None, [VP]),
    "bertrt_model_set_adapter": (ctypes.c_int, [VP, VP]),
    "bertrt_tokenize": (ctypes.c_int, [VP, c_char_p, c_char_p, c_int32, P(c_int32), P(c_int32),
                                       P(c_int32), P(c_int64), c_size_t, P(c_size_t)]),
    "bertrt_encode": (ctypes.c_int, [VP, P(Batch), FP, c_size_t, FP, c_size_t]),
    "bertrt_classify": (ctypes.c_int, [VP, P(Batch), FP, c_size_t]),
    "bertrt_tag_tokens": (ctypes.c_int, [VP, P(Batch), FP, c_size_t]),
    "bertrt_spans": (ctypes.c_int, [VP, P(Batch), FP, FP, c_size_t]),
    "bertrt_fill_mask": (ctypes.c_int, [VP, c_char_p, c_int32, P(FillCandidate), c_size_t,
                                        P(c_size_t)]),
    "bertrt_embed_options_init": (None, [P(EmbedOptions)]),
    "bertrt_embedding_dim": (ctypes.c_int, [VP, P(EmbedOptions), P(c_int32)]),
    "bertrt_embed": (ctypes.c_int, [VP, P(c_char_p), c_size_t, P(EmbedOptions), FP, c_size_t]),
    "bertrt_rerank": (ctypes.c_int, [VP, c_char_p, P(c_char_p), c_size_t, c_int32, FP, c_size_t]),
    "bertrt_quantize_embeddings": (ctypes.c_int, [FP, c_size_t, c_int32, c_char_p, FP, VP,
                                                  c_size_t]),
    "bertrt_quantized_width": (c_size_t, [c_char_p, c_int32]),
    "bertrt_finetune_options_init": (None, [P(FinetuneOptions)]),
    "bertrt_trainer_create": (ctypes.c_int, [VP, P(FinetuneOptions), c_char_p, P(VP)]),
    "bertrt_trainer_free": (None, [VP]),
    "bertrt_trainer_set_progress": (ctypes.c_int, [VP, PROGRESS, VP]),
    "bertrt_trainer_total_steps": (ctypes.c_int, [VP, P(c_int64)]),
    "bertrt_trainer_step": (ctypes.c_int, [VP, c_int64, P(StepMetrics)]),
    "bertrt_trainer_step_batch": (ctypes.c_int, [VP, P(Batch), P(c_int32), FP, P(StepMetrics)]),
    "bertrt_trainer_evaluate": (ctypes.c_int, [VP, c_char_p, ctypes.c_char_p, c_size_t,
                                               P(c_size_t)]),
    "bertrt_trainer_check_data": (ctypes.c_int, [VP, c_char_p]),
    "bertrt_trainer_save": (ctypes.c_int, [VP, c_char_p]),
    "bertrt_check_output": (ctypes.c_int, [c_char_p]),
    "bertrt_convert": (ctypes.c_int, [c_char_p, c_char_p, c_char_p, c_char_p, c_char_p]),
}


def _load():
    """The library, with an error that says where its path came from and what to do (ctypes said
    only "cannot open shared object file")."""
    path, source = os.environ.get("BERTRT_LIBRARY"), "BERTRT_LIBRARY"
    if not path:
        try:
            from ._library_path import RELATIVE_LIBRARY  # written by cmake for the install
            path = os.path.join(os.path.dirname(os.path.abspath(__file__)), RELATIVE_LIBRARY)
            source = "the installed module (_library_path.py)"
        except ImportError:
            path, source = "libbertrt.so.0", "the loader's search path"
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            f"bertrt: cannot load the C library {path} (from {source}): {e}. Set BERTRT_LIBRARY "
            "to a built libbertrt.so (e.g. build/libbertrt.so), or install with "
            "`cmake --install build`") from None
    for name, (restype, argtypes) in _SIGNATURES.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise ImportError(f"bertrt: {path} (from {source}) is not libbertrt: it has no "
                              f"{name}") from None
        f.restype, f.argtypes = restype, argtypes
    return lib


lib = _load()
