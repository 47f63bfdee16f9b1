"""Model, finetune and convert over the C API (the _lib declarations)."""
import contextlib
import ctypes
import json
import os
import threading

import numpy as np

from . import _lib
from ._lib import lib

_HEAD_KINDS = {0: "none", 1: "sequence_classification", 2: "regression",
               3: "token_classification", 4: "question_answering"}


class Error(RuntimeError):
    """A failed C API call: .status is the bertrt_status name, str() the one-line message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = lib.bertrt_status_string(status).decode()


def _check(status):
    if status != 0:
        # replace: a message that echoes a non-UTF-8 path would raise UnicodeDecodeError instead
        raise Error(status, lib.bertrt_last_error().decode(errors="replace"))


def _bytes(s, name="text", optional=True, encode=None):
    """A str (UTF-8, or `encode`'s bytes) or bytes argument for the C API, None passed through
    when optional. Anything else, a str UTF-8 cannot encode (a lone surrogate), or a NUL inside
    (C would end the string there) is an error naming the argument."""
    if s is None and optional:
        return None
    if isinstance(s, str):
        try:
            b = encode(s) if encode else s.encode()
        except UnicodeEncodeError as e:
            raise ValueError(f"{name}: not encodable as UTF-8 ({e.reason} at index "
                             f"{e.start})") from None
    elif isinstance(s, (bytes, bytearray)):
        b = bytes(s)
    else:
        raise TypeError(f"{name}: expected str or bytes, got {type(s).__name__}")
    if b"\0" in b:
        raise ValueError(f"{name}: contains a NUL character")
    return b


def _path(p, name="path", optional=False):
    """A file path (str, bytes or os.PathLike) for the C API; not empty (an empty output path
    failed with ': cannot rename temp file into place', naming nothing)."""
    if isinstance(p, os.PathLike):
        p = os.fspath(p)
    # os.fsencode: a name os.listdir gave with surrogate escapes ('m\udce9.brt') is its bytes.
    b = _bytes(p, name, optional, encode=os.fsencode)
    if b == b"":
        raise ValueError(f"{name}: empty path")
    return b


def _input_file(p, name, optional=False):
    """_path of a file to read, checked here so that the error names the Python argument and a
    folder is called one (the C API said 'train_path /tmp: no such file'); status i/o error, as
    the C API's own file errors."""
    b = _path(p, name, optional)
    if b is not None and not os.path.isfile(b):
        why = ("is a folder, not a file" if os.path.isdir(b) else
               "not a regular file" if os.path.exists(b) else "no such file")
        raise Error(3, f"{name} {os.fsdecode(b)}: {why}")
    return b


def _output_file(p, name):
    """_path of a file to write, checked before any work (finetune trained, then found a missing
    folder) by the C API's own check, where the write lands through symbolic links."""
    b = _path(p, name)
    status = lib.bertrt_check_output(b)
    if status != 0:
        raise Error(status, f"{name} {lib.bertrt_last_error().decode(errors='replace')}")
    return b


def _texts(v, name):
    """v as given when it is a str, bytes or a sequence of them (a list, tuple, NumPy array;
    text_pairs may be None); None or a non-sequence is a TypeError naming the argument (None had
    no len())."""
    if v is None and name == "text_pairs":
        return None
    if v is not None and (isinstance(v, (str, bytes)) or hasattr(v, "__len__")):
        return v
    raise TypeError(f"{name}: expected a str, bytes or a list of them, got {type(v).__name__}")


def _int_range(v, name, lo=-2**31, hi=2**31 - 1):
    """v as an int within [lo, hi] (default: int32, what a C field holds without wrapping);
    bool, float and str are refused, not converted."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(v).__name__}")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{name}: {int(v)} is outside [{lo}, {hi}]")
    return int(v)


def _int32_array(a, name):
    """a as a contiguous 2-D int32 array; integers only, each within int32 (a cast would wrap
    2**32 + 2054 to 2054 and cut 2054.7 to 2054 without a word)."""
    x = np.atleast_2d(np.asarray(a))
    if x.size and x.dtype.kind not in "iub":
        raise TypeError(f"{name}: expected integers, got dtype {x.dtype}")
    if x.size and x.dtype.kind in "iu" and (x.min() < -2**31 or x.max() > 2**31 - 1):
        raise ValueError(f"{name}: values outside int32 (min {x.min()}, max {x.max()})")
    return np.ascontiguousarray(x, dtype=np.int32)


def version():
    return lib.bertrt_version().decode()


def _ptr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype)) if a is not None else None


class Model:
    """A loaded .brt model (mapped). backend: cpu | reference | vulkan | checked.

    adapter: a LoRA adapter file (`bertrt finetune --lora-r`) to run over this model, its base
    (set_adapter); the base's weights stay mapped, never copied."""

    def __init__(self, path=None, *, buffer=None, backend="cpu", num_threads=0, device=-1,
                 verify_checksums=True, adapter=None):
        self._h = None  # close() and __del__ run on a Model whose __init__ raised
        if (path is None) == (buffer is None):
            raise ValueError("Model: give either a path or buffer=" +
                             (", not both" if path is not None else ""))
        # Checked here: ctypes wrapped ints to 32 bits (num_threads=2**32 + 1 loaded with one
        # thread) and bytes(5) is five zero bytes.
        o = _lib.ModelOptions()
        lib.bertrt_model_options_init(ctypes.byref(o))
        o.backend = _bytes(backend, "backend", optional=False)
        o.num_threads = _int_range(num_threads, "num_threads", 0)  # 0: every usable core
        o.device = _int_range(device, "device", -1)  # -1: BERTRT_VULKAN_DEVICE or 0
        if not (isinstance(verify_checksums, (bool, int, np.integer)) and
                int(verify_checksums) in (0, 1)):  # bool("no") is True
            raise TypeError(f"verify_checksums: expected True or False, got {verify_checksums!r}")
        o.verify_checksums = int(verify_checksums)
        if path is not None:
            path = _path(path)
        else:
            try:
                memoryview(buffer)
            except TypeError:
                raise TypeError(f"buffer: expected a bytes-like object, got "
                                f"{type(buffer).__name__}") from None
        # Calls in flight: close() waits for them (freeing the handle under a running forward
        # on another thread crashed the process).
        self._cv, self._busy = threading.Condition(), 0
        self._h = ctypes.c_void_p()
        if path is not None:
            _check(lib.bertrt_model_load(path, ctypes.byref(o), ctypes.byref(self._h)))
        else:
            data = bytes(buffer)
            _check(lib.bertrt_model_load_buffer(data, len(data), ctypes.byref(o),
                                                ctypes.byref(self._h)))
        c = _lib.Config()
        _check(lib.bertrt_model_config(self._h, ctypes.byref(c)))
        self.config = {n: getattr(c, n) for n, _ in _lib.Config._fields_}
        self.adapter = None
        self._describe()
        if adapter is not None:
            try:
                self.set_adapter(adapter)
            except BaseException:
                self.close()
                raise

    def _describe(self):
        """heads, labels and task: the model's, or its adapter's while one is set."""
        h = _lib.Heads()
        _check(lib.bertrt_model_heads(self._h, ctypes.byref(h)))
        self.heads = {"kind": _HEAD_KINDS[h.kind], "num_labels": h.num_labels,
                      "mlm": bool(h.has_mlm), "nsp": bool(h.has_nsp), "int8": bool(h.int8)}
        self.labels = []
        for i in range(h.num_labels):
            s = ctypes.c_char_p()
            _check(lib.bertrt_model_label(self._h, i, ctypes.byref(s)))
            self.labels.append(s.value.decode())
        t = ctypes.c_char_p()
        _check(lib.bertrt_model_task(self._h, ctypes.byref(t)))
        self.task = t.value.decode()

    def load_adapter(self, path):
        """A LoRA adapter file read for this model's base (an Adapter), to set on this model or
        on any other Model of the same base file."""
        return Adapter(self, path)

    def set_adapter(self, adapter):
        """Runs `adapter` (an Adapter, or the path of an adapter file, read for this model) from
        the next call on: its low-rank updates over the base's Linears and its head; heads,
        labels and task become the adapter's. None detaches it. Switching copies no weight."""
        if adapter is not None and not isinstance(adapter, Adapter):
            adapter = Adapter(self, adapter)
        with self._use():
            _check(lib.bertrt_model_set_adapter(self._h, adapter._h if adapter else None))
            self.adapter = adapter
            self._describe()

    def close(self):
        """Frees the model once the calls running on other threads have returned."""
        cv = getattr(self, "_cv", None)
        if cv is None:
            return
        with cv:
            cv.wait_for(lambda: self._busy == 0)
            if self._h:
                lib.bertrt_model_free(self._h)
                self._h = None

    @contextlib.contextmanager
    def _use(self):
        """The handle, held open for the duration of a call."""
        with self._cv:
            if not self._h:
                raise Error(4, "the model is closed")
            self._busy += 1
        try:
            yield self._h
        finally:
            with self._cv:
                self._busy -= 1
                self._cv.notify_all()

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def token(self, token_id):
        token_id = _int_range(token_id, "token_id")  # int() took '2054' and 2054.9
        with self._use():
            s = ctypes.c_char_p()
            _check(lib.bertrt_model_token(self._h, token_id, ctypes.byref(s)))
            return s.value.decode()

    # ---- tokenization ------------------------------------------------------------------------

    def tokenize(self, text, text_pair=None, max_seq_length=0):
        """[CLS] A [SEP] (B [SEP]): dict of int32 arrays input_ids, token_type_ids,
        attention_mask, int64 offsets [n, 2] (byte ranges in the piece's own text; -1 for
        [CLS]/[SEP]) and the pieces as strings (tokens)."""
        a, b = _bytes(text, "text"), _bytes(text_pair, "text_pair")
        max_seq_length = _int_range(max_seq_length, "max_seq_length", 0, 2**31 - 1)
        with self._use():
            n = ctypes.c_size_t()
            lib.bertrt_tokenize(self._h, a, b, max_seq_length, None, None, None, None, 0,
                                ctypes.byref(n))  # sizing call (fails with the length set)
            if n.value == 0:
                _check(lib.bertrt_tokenize(self._h, a, b, max_seq_length, None, None, None, None, 0,
                                           ctypes.byref(n)))
            ids, types, mask = (np.zeros(n.value, np.int32) for _ in range(3))
            offsets = np.zeros((n.value, 2), np.int64)
            _check(lib.bertrt_tokenize(self._h, a, b, max_seq_length, _ptr(ids, ctypes.c_int32),
                                       _ptr(types, ctypes.c_int32), _ptr(mask, ctypes.c_int32),
                                       _ptr(offsets, ctypes.c_int64), n.value, ctypes.byref(n)))
            return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask,
                    "offsets": offsets, "tokens": [self.token(i) for i in ids]}

    def encode(self, texts, text_pairs=None, max_seq_length=0):
        """A padded batch of texts (or pairs): input_ids, token_type_ids, attention_mask [B, T]."""
        texts, text_pairs = _texts(texts, "texts"), _texts(text_pairs, "text_pairs")
        if isinstance(texts, (str, bytes)):
            texts = [texts]
        if isinstance(text_pairs, (str, bytes)):
            text_pairs = [text_pairs]
        if len(texts) == 0:
            raise ValueError("texts: empty (give at least one text)")
        if text_pairs is not None and len(text_pairs) != len(texts):
            raise ValueError(f"text_pairs: {len(text_pairs)} for {len(texts)} texts")
        pairs = text_pairs if text_pairs is not None else [None] * len(texts)
        encs = [self.tokenize(t, p, max_seq_length) for t, p in zip(texts, pairs)]
        T = max(len(e["input_ids"]) for e in encs)
        out = {k: np.zeros((len(encs), T), np.int32)
               for k in ("input_ids", "token_type_ids", "attention_mask")}
        for i, e in enumerate(encs):
            for k in out:
                out[k][i, :len(e[k])] = e[k]
        return out

    # ---- inference ---------------------------------------------------------------------------

    def _batch(self, input_ids, token_type_ids, attention_mask):
        ids = _int32_array(input_ids, "input_ids")
        if ids.ndim != 2:
            raise ValueError(f"input_ids: expected [B, T], got shape {ids.shape}")

        def same(a, name):
            if a is None:
                return None
            a = _int32_array(a, name)
            if a.shape != ids.shape:
                raise ValueError(f"{name}: shape {a.shape}, input_ids has {ids.shape}")
            return a

        types, mask = same(token_type_ids, "token_type_ids"), same(attention_mask, "attention_mask")
        b = _lib.Batch(ids.shape[0], ids.shape[1], _ptr(ids, ctypes.c_int32),
                       _ptr(types, ctypes.c_int32), _ptr(mask, ctypes.c_int32))
        return b, (ids, types, mask)  # the arrays must outlive the call

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        """The encoder and the fine-tuning head: last_hidden_state [B, T, H], pooler_output
        [B, H], and logits (classification [B, K], regression [B], tagging [B, T, K]) or
        start_logits/end_logits [B, T], as the model has."""
        with self._use():
            b, keep = self._batch(input_ids, token_type_ids, attention_mask)
            B, T, H = b.batch_size, b.seq_len, self.config["hidden_size"]
            hidden, pooled = np.zeros((B, T, H), np.float32), np.zeros((B, H), np.float32)
            _check(lib.bertrt_encode(self._h, ctypes.byref(b), _ptr(hidden, ctypes.c_float),
                                     hidden.size, _ptr(pooled, ctypes.c_float), pooled.size))
            out = {"last_hidden_state": hidden, "pooler_output": pooled}
            kind, K = self.heads["kind"], self.heads["num_labels"]
            if kind in ("sequence_classification", "regression"):
                z = np.zeros((B, K) if K else (B,), np.float32)
                _check(lib.bertrt_classify(self._h, ctypes.byref(b), _ptr(z, ctypes.c_float),
                                           z.size))
                out["logits"] = z
            elif kind == "token_classification":
                z = np.zeros((B, T, K), np.float32)
                _check(lib.bertrt_tag_tokens(self._h, ctypes.byref(b), _ptr(z, ctypes.c_float),
                                             z.size))
                out["logits"] = z
            elif kind == "question_answering":
                s, e = np.zeros((B, T), np.float32), np.zeros((B, T), np.float32)
                _check(lib.bertrt_spans(self._h, ctypes.byref(b), _ptr(s, ctypes.c_float),
                                        _ptr(e, ctypes.c_float), s.size))
                out["start_logits"], out["end_logits"] = s, e
            return out

    def predict(self, texts, text_pairs=None, max_seq_length=None):
        """Per text (pair): classification {label, probabilities}, regression {score}, tagging
        {tokens, tags} (per piece), QA (text = question, pair = context) {answer, start, end}
        (start and end index the context: characters of a str, as the CLI's, bytes of a bytes;
        the best span with start <= end, at most 30 pieces).
        QA reads one window: [CLS] question [SEP] context [SEP] truncated at max_seq_length (128
        pieces by default), so an answer past it is not found; the CLI's `bertrt predict` splits
        a long context into overlapping windows (doc stride) instead. A text or pair with no
        tokens (empty, or only spaces, control or zero-width characters) is a ValueError, as the
        CLI refuses such a line."""
        texts, text_pairs = _texts(texts, "texts"), _texts(text_pairs, "text_pairs")
        if isinstance(texts, (str, bytes)):
            texts = [texts]
        if isinstance(text_pairs, (str, bytes)):
            text_pairs = [text_pairs]
        kind = self.heads["kind"]
        if kind == "none":
            raise Error(4, "predict: the model has no fine-tuning head")
        if kind == "question_answering" and (text_pairs is None or len(text_pairs) != len(texts)):
            raise ValueError("predict: a QA model takes questions and text_pairs= (the contexts)")
        if max_seq_length is None:
            max_seq_length = min(128, self.config["max_position_embeddings"])
        batch = self.encode(texts, text_pairs, max_seq_length)
        # A text with no pieces is refused as `bertrt predict` refuses the line (the model would
        # answer a bare [CLS] [SEP]): [CLS] and [SEP] are A's (type 0), B's [SEP] is its own.
        for i in range(len(texts)):
            on, types = batch["attention_mask"][i] == 1, batch["token_type_ids"][i]
            for name, pieces in (("texts", int((on & (types == 0)).sum()) - 2),
                                 ("text_pairs", int((on & (types == 1)).sum()) - 1)):
                if pieces == 0:
                    raise ValueError(f"{name}[{i}]: no tokens (empty, or only spaces, control or "
                                     "zero-width characters)")
        out = self.forward(**batch)
        res = []
        for i in range(len(texts)):
            if kind == "sequence_classification":
                z = out["logits"][i].astype(np.float64)
                p = np.exp(z - z.max())
                p /= p.sum()
                res.append({"label": self.labels[int(np.argmax(z))],
                            "probabilities": dict(zip(self.labels, p.tolist()))})
            elif kind == "regression":
                res.append({"score": float(out["logits"][i])})
            elif kind == "token_classification":
                n = int(batch["attention_mask"][i].sum())
                ids = batch["input_ids"][i][:n]
                tags = [self.labels[int(k)] for k in np.argmax(out["logits"][i][:n], axis=-1)]
                res.append({"tokens": [self.token(t) for t in ids], "tags": tags})
            else:
                enc = self.tokenize(texts[i], text_pairs[i], max_seq_length)
                ctx = np.where((enc["token_type_ids"] == 1) & (enc["offsets"][:, 0] >= 0))[0]
                s, e = out["start_logits"][i], out["end_logits"][i]
                best = max(((s[a] + e[b], a, b) for a in ctx for b in ctx if a <= b < a + 30),
                           default=None)
                if best is None:
                    res.append({"answer": "", "start": -1, "end": -1})
                    continue
                _, a, b = best
                start, end = int(enc["offsets"][a, 0]), int(enc["offsets"][b, 1])  # bytes
                ctx_b = text_pairs[i]
                if isinstance(ctx_b, str):
                    ctx_b = ctx_b.encode()
                answer = ctx_b[start:end].decode(errors="replace")
                if isinstance(text_pairs[i], str):  # offsets fall between characters: exact
                    start = len(ctx_b[:start].decode())
                    end = start + len(answer)
                res.append({"answer": answer, "start": start, "end": end})
        return res

    def fill_mask(self, text, top_k=5):
        """Per [MASK]: {position, candidates: [{token, token_id, probability}]}, best first."""
        text = _bytes(text, "text")
        top_k = _int_range(top_k, "top_k", 1, 2**31 - 1)
        with self._use():
            n = ctypes.c_size_t()
            lib.bertrt_fill_mask(self._h, text, top_k, None, 0, ctypes.byref(n))
            if n.value == 0:
                _check(lib.bertrt_fill_mask(self._h, text, top_k, None, 0, ctypes.byref(n)))
            c = (_lib.FillCandidate * n.value)()
            _check(lib.bertrt_fill_mask(self._h, text, top_k, c, n.value, ctypes.byref(n)))
            out = []
            for x in c:
                if not out or out[-1]["position"] != x.position:
                    out.append({"position": x.position, "candidates": []})
                out[-1]["candidates"].append({"token": self.token(x.token_id),
                                              "token_id": x.token_id,
                                              "probability": x.probability})
            return out

    def embed(self, texts, dimensions=None, normalize=True, prompt_name=None, prompt=None,
              pooling=None, batch_size=32, precision="float32", ranges=None,
              calibration_embeddings=None):
        """Sentence embeddings of a str or a list of them: a float32 array [len(texts), D] (one
        row for a str), as sentence-transformers' encode computes them with the model's embedding
        head. dimensions keeps the first D (Matryoshka), then normalize L2-normalizes (False: the
        model's own output, truncated);
        prompt_name picks one of the model's prompts, prompt gives the text itself ("" for
        none); pooling ("mean", "cls", ...) pools a model without an embedding head.
        precision "int8", "uint8", "binary" or "ubinary" quantizes them as sentence-transformers'
        encode(precision=...) (quantize_embeddings below, with ranges / calibration_embeddings)."""
        if precision != "float32":
            _quantize_args(precision, ranges, calibration_embeddings)  # fail before the model runs
        texts = _texts(texts, "texts")
        items = [texts] if isinstance(texts, (str, bytes)) else list(texts)
        o = _lib.EmbedOptions()
        lib.bertrt_embed_options_init(ctypes.byref(o))
        o.dimensions = 0 if dimensions is None else _int_range(dimensions, "dimensions", 1)
        if not isinstance(normalize, bool):
            raise TypeError(f"normalize: expected a bool, got {type(normalize).__name__}")
        o.normalize = int(normalize)
        o.prompt_name = _bytes(prompt_name, "prompt_name")
        o.prompt = _bytes(prompt, "prompt")
        o.pooling = _bytes(pooling, "pooling")
        o.batch_size = _int_range(batch_size, "batch_size", 1)
        encoded = [_bytes(t, f"texts[{i}]", optional=False) for i, t in enumerate(items)]
        arr = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)
        with self._use():
            d = ctypes.c_int32()
            _check(lib.bertrt_embedding_dim(self._h, ctypes.byref(o), ctypes.byref(d)))
            out = np.zeros((len(encoded), d.value), dtype=np.float32)
            _check(lib.bertrt_embed(self._h, arr, len(encoded), ctypes.byref(o),
                                    _ptr(out, ctypes.c_float), out.size))
        if precision != "float32":
            return quantize_embeddings(out, precision, ranges, calibration_embeddings)
        return out

    def rerank(self, query, passages, top_k=None, raw_scores=False):
        """A cross-encoder's scores of (query, passage): [{"index", "score"}], best first (the
        top_k best when given), as TEI's /rerank answers. The score is sigmoid(logit),
        CrossEncoder.predict's default, or the logit with raw_scores."""
        q = _bytes(query, "query", optional=False)
        passages = _texts(passages, "passages")
        items = [passages] if isinstance(passages, (str, bytes)) else list(passages)
        encoded = [_bytes(t, f"passages[{i}]", optional=False) for i, t in enumerate(items)]
        if top_k is not None:
            top_k = _int_range(top_k, "top_k", 1)
        if not isinstance(raw_scores, bool):
            raise TypeError(f"raw_scores: expected a bool, got {type(raw_scores).__name__}")
        arr = (ctypes.c_char_p * max(1, len(encoded)))(*encoded)
        scores = np.zeros(len(encoded), dtype=np.float32)
        with self._use():
            _check(lib.bertrt_rerank(self._h, q, arr, len(encoded), int(raw_scores),
                                     _ptr(scores, ctypes.c_float), scores.size))
        order = sorted(range(len(encoded)), key=lambda i: -scores[i])
        if top_k is not None:
            order = order[:top_k]
        return [{"index": i, "score": float(scores[i])} for i in order]


_PRECISIONS = ("float32", "int8", "uint8", "binary", "ubinary")


class Adapter:
    """A LoRA adapter (`bertrt finetune --lora-r ... -o FILE`) read for the base `model` runs
    on: checked against it (an adapter of another base is refused), holding only the adapter's
    own tensors. Set it with Model.set_adapter on `model` or on another Model of the same base;
    it may run on several at once."""

    def __init__(self, model, path):
        self._h = None
        if not isinstance(model, Model):
            raise TypeError(f"model: expected a bertrt.Model, got {type(model).__name__}")
        b = _input_file(path, "path")
        self.path = os.fsdecode(b)
        h = ctypes.c_void_p()
        with model._use():
            _check(lib.bertrt_adapter_load(model._h, b, ctypes.byref(h)))
        self._h = h

    def close(self):
        """Frees this reference; Models that run the adapter keep theirs."""
        if self._h:
            lib.bertrt_adapter_free(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"bertrt.Adapter({self.path!r})"


def _quantize_args(precision, ranges, calibration_embeddings):
    if precision not in _PRECISIONS:
        raise ValueError(f"precision: expected one of {', '.join(_PRECISIONS)}, got {precision!r}")
    if ranges is not None and calibration_embeddings is not None:
        raise ValueError("ranges and calibration_embeddings: give one of them, not both")


def quantize_embeddings(embeddings, precision, ranges=None, calibration_embeddings=None):
    """sentence-transformers' quantize_embeddings on float embeddings [N, D] (bertrt_quantize_
    embeddings): "int8" / "uint8" map each dimension's range to 256 steps, the ranges given as
    `ranges` [2, D] (lowest, then highest), else those of `calibration_embeddings`, else those of
    the embeddings themselves; "binary" / "ubinary" pack the bits x > 0 (np.packbits, one row at a
    time), binary as int8 byte − 128. "float32" returns them as float32. Values outside the
    ranges saturate."""
    _quantize_args(precision, ranges, calibration_embeddings)
    e = np.ascontiguousarray(embeddings, dtype=np.float32)
    if e.ndim != 2:
        raise ValueError(f"embeddings: expected a [N, D] matrix, got shape {e.shape}")
    if precision == "float32":
        return e
    n, d = e.shape
    if calibration_embeddings is not None:
        c = np.asarray(calibration_embeddings, dtype=np.float32)
        if c.ndim != 2 or c.shape[1] != d or c.shape[0] == 0:
            raise ValueError(f"calibration_embeddings: expected a [M ≥ 1, {d}] matrix, got shape {c.shape}")
        ranges = np.vstack((c.min(axis=0), c.max(axis=0)))
    r = None
    if ranges is not None:
        r = np.ascontiguousarray(ranges, dtype=np.float32)
        if r.shape != (2, d):
            raise ValueError(f"ranges: expected shape (2, {d}), got {r.shape}")
    name = precision.encode()
    width = lib.bertrt_quantized_width(name, d)
    out = np.zeros((n, width), dtype=np.int8 if precision in ("int8", "binary") else np.uint8)
    _check(lib.bertrt_quantize_embeddings(_ptr(e, ctypes.c_float), n, d, name,
                                          None if r is None else _ptr(r, ctypes.c_float),
                                          out.ctypes.data_as(ctypes.c_void_p), out.size))
    return out


def _option_value(name, ctype, v):
    """v for the C field `name` of type ctype; an error naming the option when it cannot hold v
    (ctypes would raise about 'bytes' or cut an int to the field's width without a word)."""
    if ctype is _lib.c_char_p:
        if not isinstance(v, str):
            raise TypeError(f"finetune: option {name!r} must be a str, got {type(v).__name__}")
        return v.encode()
    if ctype is _lib.c_float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"finetune: option {name!r} must be a number, got {type(v).__name__}")
        return float(v)
    if not isinstance(v, int):  # bool is an int: True/False are 1/0
        raise TypeError(f"finetune: option {name!r} must be an int, got {type(v).__name__}")
    bits = ctypes.sizeof(ctype) * 8
    lo, hi = (0, 2**bits - 1) if ctype is ctypes.c_uint64 else (-2**(bits - 1), 2**(bits - 1) - 1)
    if not lo <= v <= hi:
        raise ValueError(f"finetune: option {name!r} = {v} is outside [{lo}, {hi}]")
    return int(v)


def finetune(model, task, train, output, dev=None, progress=None, backend="cpu", num_threads=0,
             **options):
    """`bertrt finetune` through the C API's trainer: model (path) + task on the train file,
    written atomically to output (int8 with qat=True); returns the dev metrics (the keys of
    `bertrt eval --json`) when dev is given, else {}. options: the CLI's hyper-parameters by
    their C names (epochs, max_steps, batch_size, learning_rate, warmup_ratio, weight_decay,
    seed, max_seq_length, group_by_length, eval_batch_size, qat, hidden_dropout_prob,
    attention_probs_dropout_prob; memory: freeze_embeddings, freeze_layers, recompute; and for
    task "tsv"
    text_column, text_pair_column, label_column, labels, regression, no_header).
    progress(metrics dict) after every step; return True to stop (raises bertrt.Error). An
    exception raised by progress stops the run and is raised again here (nothing is written).
    A dev set the task cannot evaluate (no examples, one for a correlation) is refused before
    training."""
    # The paths first: a missing dev file, or an empty output, failed only after training.
    model_b = _input_file(model, "model")
    train_b, dev_b = _input_file(train, "train"), _input_file(dev, "dev", optional=True)
    out_b = _output_file(output, "output")
    task_b = _bytes(task, "task", optional=False)
    m = Model(model_b, backend=backend, num_threads=num_threads)
    o = _lib.FinetuneOptions()
    lib.bertrt_finetune_options_init(ctypes.byref(o))
    o.task = task_b
    keep = []
    fields = dict(_lib.FinetuneOptions._fields_)
    for k, v in options.items():
        if k not in fields or k in ("struct_size", "task"):
            raise TypeError(f"finetune: unknown option {k!r}")
        v = _option_value(k, fields[k], v)
        if isinstance(v, bytes):
            keep.append(v)
        setattr(o, k, v)
    t = ctypes.c_void_p()
    _check(lib.bertrt_trainer_create(m._h, ctypes.byref(o), train_b, ctypes.byref(t)))
    try:
        if dev is not None:  # a dev set that cannot be evaluated is refused before training
            _check(lib.bertrt_trainer_check_data(t, dev_b))
        cb, raised = None, []
        if progress is not None:
            def trampoline(p, _user):
                # ctypes prints and drops an exception raised in a callback: keep it, stop the
                # run, and raise it once the C call has returned.
                try:
                    s = p.contents
                    return int(bool(progress({n: getattr(s, n)
                                              for n, _ in _lib.StepMetrics._fields_})))
                except BaseException as e:  # noqa: B902 (KeyboardInterrupt too)
                    raised.append(e)
                    return 1
            cb = _lib.PROGRESS(trampoline)
            _check(lib.bertrt_trainer_set_progress(t, cb, None))
        total = ctypes.c_int64()
        _check(lib.bertrt_trainer_total_steps(t, ctypes.byref(total)))
        status = lib.bertrt_trainer_step(t, total.value, None)
        if raised:
            raise raised[0]
        _check(status)
        metrics, failed = {}, None
        if dev is not None:
            n = ctypes.c_size_t()
            buf = ctypes.create_string_buffer(1 << 16)
            try:
                _check(lib.bertrt_trainer_evaluate(t, dev_b, buf, len(buf), ctypes.byref(n)))
                metrics = json.loads(buf.value.decode())
            except Error as e:  # the trained model is written all the same, then the error raised
                failed = e
        _check(lib.bertrt_trainer_save(t, out_b))
        if failed is not None:
            raise failed
        return metrics
    finally:
        lib.bertrt_trainer_free(t)
        m.close()


def convert(input, output, to="brt", dtype="f32", vocab=None):
    """`bertrt-convert`: a Hugging Face folder, torch.save / safetensors file or TF checkpoint
    to a .brt file (to="brt"; a sentence-transformers folder keeps its embedding head), or a
    .brt to a Hugging Face folder (to="hf") or a sentence-transformers folder
    (to="sentence-transformers"). vocab (a vocab.txt) replaces or supplies the vocabulary of a
    .brt; with the folder targets it is an error (the folder gets the .brt's own vocabulary)."""
    in_b, out_b = _path(input, "input"), _path(output, "output")
    to_b, dtype_b = _bytes(to, "to"), _bytes(dtype, "dtype")
    if vocab is not None and to_b != b"brt":
        raise ValueError(f"vocab: applies to conversions into .brt (to='brt'); to={to!r} writes "
                         "the .brt's own vocabulary")
    vocab_b = _input_file(vocab, "vocab", optional=True)
    _check(lib.bertrt_convert(in_b, out_b, to_b, dtype_b, vocab_b))
