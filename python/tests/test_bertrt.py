"""pytest of the bertrt Python module (python/bertrt over libbertrt.so).

Run by ctest (tests/capi/tests.cmake) with PYTHONPATH=python, BERTRT_LIBRARY (the built
libbertrt.so), BERTRT_CLI (the built `bertrt`), BERTRT_SOURCE_DIR and BERTRT_DATA.

Parity: tests/reference/make_hf_models.py writes tiny Hugging Face checkpoints with their float64
PyTorch outputs; bertrt.convert turns them into .brt files, whose Python forward must match the
reference within the converter tests' tolerance (tests/unit/convert_hf_test.cpp kTol: 2e-6 of the
tensor's largest magnitude, same files, same inputs) and the CLI's `bertrt forward` exactly (the
same library code on the same rows).
"""
import gc
import json
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import bertrt

SRC = os.environ.get("BERTRT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("BERTRT_CLI", "")
DATA = os.environ.get("BERTRT_DATA", os.path.join(SRC, "..", "shared", "data"))
KTOL = 2e-6  # tests/unit/convert_hf_test.cpp


def read_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    dtypes = {"F64": np.float64, "F32": np.float32, "I64": np.int64, "I32": np.int32}
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dtypes[v["dtype"]]).reshape(v["shape"])
    return out


def rel_err(got, want):
    want = np.asarray(want, np.float64)
    return float(np.max(np.abs(np.asarray(got, np.float64) - want)) / max(np.max(np.abs(want)), 1e-30))


@pytest.fixture(scope="session")
def hf(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf")
    rc = subprocess.call(["/usr/bin/python3", os.path.join(SRC, "tests/reference/make_hf_models.py"),
                          "--out", str(out)], stdout=subprocess.DEVNULL)
    if rc == 77:
        pytest.skip("python3-torch missing")
    assert rc == 0
    return out, read_safetensors(str(out / "ref.safetensors"))


def inputs(ref):
    return {k: ref["input/" + k].astype(np.int32) for k in ("input_ids", "token_type_ids", "attention_mask")}


def cli_forward(brt, ids, types, mask):
    lines = "".join(json.dumps({"input_ids": ids[b].tolist(), "token_type_ids": types[b].tolist(),
                                "attention_mask": mask[b].tolist()}) + "\n" for b in range(len(ids)))
    p = subprocess.run([CLI, "forward", "--model", str(brt)], input=lines, capture_output=True,
                       text=True, env={**os.environ, "BERTRT_NUM_THREADS": "1"}, check=True)
    return [json.loads(line) for line in p.stdout.splitlines()]


@pytest.mark.parametrize("folder,head", [("st_seqcls", "cls_logits"), ("st_tokcls", "tok_logits"),
                                         ("st_qa", "qa_logits")])
def test_forward_of_a_converted_model_matches_pytorch_and_the_cli(hf, tmp_path, folder, head):
    out, ref = hf
    brt = tmp_path / "m.brt"
    bertrt.convert(out / folder, brt)
    m = bertrt.Model(brt, num_threads=1)
    x = inputs(ref)
    y = m.forward(**x)
    B, T = x["input_ids"].shape
    assert rel_err(y["last_hidden_state"], ref["gelu_f32/last_hidden_state"]) <= KTOL
    if folder == "st_seqcls":  # BertForTokenClassification/QuestionAnswering have no pooler
        assert rel_err(y["pooler_output"], ref["gelu_f32/pooler_output"]) <= KTOL
    want = ref["gelu_f32/" + head]
    if head == "qa_logits":
        got = np.stack([y["start_logits"].reshape(-1), y["end_logits"].reshape(-1)], axis=1)
    else:
        got = y["logits"].reshape(want.shape)
    assert rel_err(got, want) <= KTOL
    if not CLI:
        pytest.skip("BERTRT_CLI not set")
    # The CLI, a row at a time: the Python forward of the same row gives the same floats.
    rows = cli_forward(brt, x["input_ids"], x["token_type_ids"], x["attention_mask"])
    for b in range(B):
        one = m.forward(x["input_ids"][b], x["token_type_ids"][b], x["attention_mask"][b])
        np.testing.assert_array_equal(one["last_hidden_state"][0], np.array(rows[b]["last_hidden_state"], np.float32))
        np.testing.assert_array_equal(one["pooler_output"][0], np.array(rows[b]["pooler_output"], np.float32))
        if "logits" in rows[b]:
            np.testing.assert_array_equal(one["logits"].reshape(-1), np.array(rows[b]["logits"], np.float32).reshape(-1))


def test_a_converted_classifier_names_its_labels_as_the_cli_does(hf, tmp_path):
    """The config's id2label (negative, neutral, positive; finetuning_task sst3, no task bertrt
    knows): Model.labels and predict use those names, and `bertrt predict` needs no --task for
    it and prints the same labels, without a note on stderr."""
    out, _ = hf
    brt = tmp_path / "m.brt"
    bertrt.convert(out / "st_seqcls", brt)
    m = bertrt.Model(brt, num_threads=1)
    assert m.labels == ["negative", "neutral", "positive"]
    texts = ["a good film", "a bad one"]
    got = m.predict(texts)
    assert all(set(p["probabilities"]) == set(m.labels) for p in got)
    if not CLI:
        pytest.skip("BERTRT_CLI not set")
    c = subprocess.run([CLI, "predict", "--model", str(brt), "--json"], input="\n".join(texts) + "\n",
                       capture_output=True, text=True, check=True,
                       env={**os.environ, "BERTRT_NUM_THREADS": "1"})
    assert c.stderr == ""
    rows = [json.loads(line) for line in c.stdout.splitlines()]
    assert [r["line"] for r in rows] == [1, 2] and [r["text"] for r in rows] == texts
    assert [r["label"] for r in rows] == [p["label"] for p in got]
    assert [list(r["probabilities"]) for r in rows] == [m.labels, m.labels]


def test_model_queries_tokenize_and_fill_mask_match_the_cli(hf, tmp_path):
    out, _ = hf
    brt = tmp_path / "pre.brt"
    bertrt.convert(out / "st_pretraining_f32", brt)
    m = bertrt.Model(buffer=open(brt, "rb").read(), num_threads=1)
    assert m.config["hidden_size"] == 36 and m.heads["mlm"] and m.heads["kind"] == "none"
    vocab = [m.token(i) for i in range(m.config["vocab_size"])]
    words = [w for w in vocab if w.isalpha()][:3]
    text = f"{words[0]} [MASK] {words[1]}"
    enc = m.tokenize(text, words[2])
    assert enc["tokens"][0] == "[CLS]" and enc["tokens"][-1] == "[SEP]"
    assert enc["token_type_ids"][-1] == 1 and enc["offsets"][0].tolist() == [-1, -1]
    assert text.encode()[enc["offsets"][1][0]:enc["offsets"][1][1]].decode() == words[0]
    # Bytes that are not UTF-8 are refused, not dropped (Latin-1 "café" read as "caf").
    with pytest.raises(bertrt.Error, match="text_a: byte 4 \\(0xE9\\) is not UTF-8"):
        m.tokenize(b"caf\xe9 ok")
    with pytest.raises(ValueError, match="text: not encodable as UTF-8 \\(surrogates not "
                                         "allowed at index 1\\)"):
        m.tokenize("a\ud800b")
    # A file name os.listdir returns with surrogate escapes is opened by its bytes.
    odd = os.path.join(os.fsdecode(bytes(tmp_path)), os.fsdecode(b"m\xe9.brt"))
    os.link(brt, os.fsencode(odd))
    assert bertrt.Model(odd, num_threads=1).config["hidden_size"] == 36
    got = m.fill_mask(text, top_k=4)
    assert len(got) == 1 and len(got[0]["candidates"]) == 4
    if not CLI:
        pytest.skip("BERTRT_CLI not set")
    p = subprocess.run([CLI, "fill-mask", "--model", str(brt), "--top-k", "4", "--json", text],
                       capture_output=True, text=True, check=True,
                       env={**os.environ, "BERTRT_NUM_THREADS": "1"})
    want = json.loads(p.stdout)
    assert got[0]["position"] == want["position"]
    assert [c["token"] for c in got[0]["candidates"]] == [c["token"] for c in want["candidates"]]
    np.testing.assert_allclose([c["probability"] for c in got[0]["candidates"]],
                               [c["probability"] for c in want["candidates"]], rtol=1e-6)  # float vs double


def test_errors_name_the_argument(hf, tmp_path):
    out, _ = hf
    with pytest.raises(bertrt.Error, match="missing.brt: No such file") as e:
        bertrt.Model(tmp_path / "missing.brt")
    assert e.value.status == "i/o error"
    # A message that echoes a path that is not UTF-8 is still a bertrt.Error (was
    # UnicodeDecodeError, hiding the message).
    with pytest.raises(bertrt.Error, match="no-such-\ufffd.brt"):
        bertrt.Model(os.fsencode(tmp_path) + b"/no-such-\xff.brt")
    brt = tmp_path / "m.brt"
    bertrt.convert(out / "st_seqcls", brt)
    m = bertrt.Model(brt)
    T = m.config["max_position_embeddings"] + 1
    with pytest.raises(bertrt.Error, match=f"batch.seq_len {T} exceeds the model's max_position_embeddings"):
        m.forward(np.full((1, T), 5, np.int32))
    with pytest.raises(bertrt.Error, match="no such file or folder"):
        bertrt.convert(tmp_path / "nothing", tmp_path / "x.brt")
    assert not (tmp_path / "x.brt").exists()
    with pytest.raises(bertrt.Error, match="vocab /nope/vocab.txt: no such file"):
        bertrt.convert(out / "st_seqcls", tmp_path / "x.brt", vocab="/nope/vocab.txt")
    # An output that cannot be written is refused before the checkpoint is read (as by the CLI).
    with pytest.raises(bertrt.Error, match="bertrt_convert: output .*nodir/x.brt: folder "
                                           ".*nodir' does not exist"):
        bertrt.convert(out / "st_seqcls", tmp_path / "nodir" / "x.brt")
    st = out / "st_seqcls" / "model.safetensors"
    before = st.read_bytes()
    with pytest.raises(bertrt.Error, match="exists and is not a .brt model file"):
        bertrt.convert(st, st)
    assert st.read_bytes() == before
    with pytest.raises(bertrt.Error, match="MLM head"):
        m.fill_mask("a [MASK]")
    # Inputs the C API cannot take are refused, not changed: bytes are the text (not its repr),
    # ids past int32 or fractional are errors (a cast wrapped 2**32 + 5 to 5), pairs must match.
    assert m.tokenize(b"hello")["tokens"] == m.tokenize("hello")["tokens"]
    with pytest.raises(TypeError, match="text: expected str or bytes, got int"):
        m.tokenize(5)
    with pytest.raises(ValueError, match="text: contains a NUL"):
        m.tokenize("a\0b")
    with pytest.raises(ValueError, match="path: contains a NUL"):
        bertrt.Model(str(brt) + "\0junk")
    with pytest.raises(ValueError, match="input_ids: values outside int32"):
        m.forward([[101, 2**32 + 5, 102]])
    with pytest.raises(TypeError, match="attention_mask: expected integers, got dtype float64"):
        m.forward([[101, 5, 102]], attention_mask=[[1, 1.5, 1]])
    with pytest.raises(ValueError, match="text_pairs: 1 for 2 texts"):
        m.encode(["a", "b"], text_pairs=["x"])
    with pytest.raises(ValueError, match="texts: empty"):
        m.predict([])
    with pytest.raises(ValueError, match="Model: give either a path or buffer=$"):
        bertrt.Model(None)
    m.close()
    with pytest.raises(bertrt.Error, match="the model is closed"):
        m.forward([[101, 102]])


def test_ints_and_types_are_refused_not_converted(hf, tmp_path, monkeypatch):
    """token(), num_threads and device went through int() or ctypes: 2**32 + 2054 was token
    2054, '2054' and 2054.9 were accepted, num_threads=2**32 + 1 loaded with one thread;
    backend=None and buffer='abc' failed without naming the argument, buffer=5 was bytes(5)."""
    out, _ = hf
    brt = tmp_path / "m.brt"
    bertrt.convert(out / "st_seqcls", brt)
    m = bertrt.Model(brt, num_threads=1)
    assert m.token(np.int64(3)) == m.token(3)  # NumPy ints (tokenize's ids) still are ints
    with pytest.raises(ValueError, match=r"token_id: 4294969350 is outside \[-2147483648, 2147483647\]"):
        m.token(2**32 + 2054)
    with pytest.raises(TypeError, match="token_id: expected an int, got str"):
        m.token("2054")
    with pytest.raises(TypeError, match="token_id: expected an int, got float"):
        m.token(2054.9)
    # Errors raised by __init__: __del__ of the half-built Model printed "Exception ignored ...
    # no attribute '_h'" (sys.unraisablehook sees what it would print).
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    for kw, exc, msg in [({"num_threads": 2**32 + 1}, ValueError, "num_threads: 4294967297 is outside"),
                         ({"num_threads": 2**31}, ValueError, r"num_threads: 2147483648 is outside \[0, "),
                         ({"num_threads": -1}, ValueError, "num_threads: -1 is outside"),
                         ({"device": -2}, ValueError, r"device: -2 is outside \[-1, 2147483647\]"),
                         ({"num_threads": 1.5}, TypeError, "num_threads: expected an int, got float"),
                         ({"num_threads": True}, TypeError, "num_threads: expected an int, got bool"),
                         ({"device": 2**32 - 1}, ValueError, "device: 4294967295 is outside"),
                         ({"device": "0"}, TypeError, "device: expected an int, got str"),
                         ({"backend": None}, TypeError, "backend: expected str or bytes, got NoneType"),
                         ({"verify_checksums": "no"}, TypeError,
                          "verify_checksums: expected True or False, got 'no'")]:
        with pytest.raises(exc, match=msg):
            bertrt.Model(brt, **kw)
    data = brt.read_bytes()
    for buf, msg in [(5, "got int"), ("abc", "got str"), ([1, 2], "got list")]:
        with pytest.raises(TypeError, match="buffer: expected a bytes-like object, " + msg):
            bertrt.Model(buffer=buf)
    with pytest.raises(ValueError, match="path: empty path"):
        bertrt.Model("")
    gc.collect()
    assert unraisable == []
    for buf in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        assert bertrt.Model(buffer=buf).config == m.config


def test_paths_are_checked_and_named(hf, tmp_path):
    """An empty output said ': cannot rename temp file into place'; a folder as train said 'no
    such file' (as dev, only after training); task=None raised AttributeError; convert to="hf"
    ignored vocab."""
    out, _ = hf
    brt = tmp_path / "m.brt"
    bertrt.convert(out / "st_seqcls", brt)
    train = tmp_path / "train.tsv"
    train.write_text("sentence\tlabel\na witty movie\t1\n")
    with pytest.raises(TypeError, match="task: expected str or bytes, got NoneType"):
        bertrt.finetune(brt, None, train, tmp_path / "o.brt", max_steps=1)
    with pytest.raises(ValueError, match="output: empty path"):
        bertrt.finetune(brt, "sst2", train, "", max_steps=1)
    for kw, name in [({"train": tmp_path}, "train"), ({"dev": tmp_path}, "dev"),
                     ({"model": tmp_path}, "model")]:
        args = {"model": brt, "task": "sst2", "train": train, "output": tmp_path / "o.brt", **kw}
        with pytest.raises(bertrt.Error, match=f"{name} {re.escape(str(tmp_path))}: is a folder") as e:
            bertrt.finetune(**args, max_steps=1)
        assert e.value.status == "i/o error"
    with pytest.raises(bertrt.Error, match="dev /nope/dev.tsv: no such file"):
        bertrt.finetune(brt, "sst2", train, tmp_path / "o.brt", dev="/nope/dev.tsv", max_steps=1)
    assert not (tmp_path / "o.brt").exists()
    with pytest.raises(ValueError, match="output: empty path"):
        bertrt.convert(out / "st_seqcls", "")
    with pytest.raises(bertrt.Error, match=f"vocab {re.escape(str(tmp_path))}: is a folder"):
        bertrt.convert(out / "st_seqcls", tmp_path / "x.brt", vocab=tmp_path)
    with pytest.raises(ValueError, match="vocab: applies to conversions into .brt"):
        bertrt.convert(brt, tmp_path / "hf", to="hf", vocab="/nonexistent")
    assert not (tmp_path / "x.brt").exists() and not (tmp_path / "hf").exists()


def test_close_waits_for_a_forward_on_another_thread(hf, tmp_path):
    """close() on one thread while another runs forward freed the handle under it (a segfault or
    a hang); it now waits for the call to return."""
    import threading
    out, _ = hf
    brt = tmp_path / "m.brt"
    bertrt.convert(out / "st_seqcls", brt)
    m = bertrt.Model(brt)
    T = m.config["max_position_embeddings"]
    ids = np.full((64, T), 5, np.int32)
    want = m.forward(ids)["logits"]
    got, started = [], threading.Event()

    def run():
        started.set()
        got.append(m.forward(ids)["logits"])
    t = threading.Thread(target=run)
    t.start()
    started.wait()
    m.close()
    t.join(60)
    assert not t.is_alive()
    assert len(got) == 1 and np.array_equal(got[0], want)


def head(src, dst, n):
    with open(src) as f, open(dst, "w") as g:
        for _, line in zip(range(n), f):
            g.write(line)


def test_finetune_then_predict(tmp_path):
    vocab = os.path.join(DATA, "vocab/bert-base-uncased-vocab.txt")
    sst2 = os.path.join(DATA, "glue/SST-2")
    if not (os.path.exists(vocab) and os.path.exists(sst2) and CLI):
        pytest.skip("no SST-2 data or BERTRT_CLI")
    init = tmp_path / "init.brt"
    subprocess.run([CLI, "init", "--preset", "tiny", "--vocab", vocab, "-o", str(init)], check=True,
                   capture_output=True)
    head(os.path.join(sst2, "train.tsv"), tmp_path / "train.tsv", 65)
    head(os.path.join(sst2, "dev.tsv"), tmp_path / "dev.tsv", 33)
    steps = []
    metrics = bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "sst2.brt",
                              dev=tmp_path / "dev.tsv", epochs=1, batch_size=16, max_seq_length=64,
                              learning_rate=1e-3, progress=lambda s: steps.append(s["step"]))
    assert steps == [1, 2, 3, 4]
    assert metrics["task"] == "sst2" and metrics["examples"] == 32 and 0 <= metrics["accuracy"] <= 1
    m = bertrt.Model(tmp_path / "sst2.brt")
    assert m.task == "sst2" and m.heads["kind"] == "sequence_classification"
    # The SST-2 file spells its labels 0/1: the names are those of Hugging Face datasets' sst2.
    assert m.labels == ["negative", "positive"]
    p = m.predict(["a gorgeous, witty movie", "dull"])
    assert [x["label"] for x in p] == [max(x["probabilities"], key=x["probabilities"].get) for x in p]
    # `bertrt predict` names them the same way (one rule: tasks/label_names.h).
    c = subprocess.run([CLI, "predict", "--model", str(tmp_path / "sst2.brt")],
                       input="a gorgeous, witty movie\ndull\n", capture_output=True, text=True,
                       check=True)
    assert [line.split("\t")[0] for line in c.stdout.splitlines()] == [x["label"] for x in p]
    # The CLI's eval of the saved file reports what the trainer's evaluate did.
    e = subprocess.run([CLI, "eval", "--model", str(tmp_path / "sst2.brt"), "--data",
                        str(tmp_path / "dev.tsv"), "--json"], capture_output=True, text=True, check=True)
    assert json.loads(e.stdout)["accuracy"] == metrics["accuracy"]
    with pytest.raises(bertrt.Error, match="options.learning_rate"):
        bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "bad.brt", learning_rate=-1.0)
    assert not (tmp_path / "bad.brt").exists()
    # A dev set that cannot be evaluated is refused before training: no step, nothing written.
    (tmp_path / "header.tsv").write_text("sentence\tlabel\n")
    no_steps = []
    with pytest.raises(bertrt.Error, match="header.tsv"):
        bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "bad.brt",
                        dev=tmp_path / "header.tsv", epochs=1, batch_size=16, max_seq_length=64,
                        progress=lambda s: no_steps.append(s["step"]))
    assert no_steps == [] and not (tmp_path / "bad.brt").exists()
    # So is an output that cannot be written: a missing folder, a folder, through a link too.
    os.symlink("nodir/x.brt", tmp_path / "lnk.brt")
    for out, why in [(tmp_path / "nodir" / "x.brt", "output .*nodir/x.brt: folder .*nodir' does not exist"),
                     (tmp_path, "is a folder"), (tmp_path / "lnk.brt", "link's target")]:
        with pytest.raises(bertrt.Error, match=why):
            bertrt.finetune(init, "sst2", tmp_path / "train.tsv", out, epochs=1, batch_size=16,
                            max_seq_length=64, progress=lambda s: no_steps.append(s["step"]))
    assert no_steps == []
    with pytest.raises(bertrt.Error, match="options.hidden_dropout_prob"):
        bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "bad.brt",
                        hidden_dropout_prob=1.0)
    # With dropout the run takes other steps (the C API test checks the masks are seeded).
    dropped = bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "drop.brt",
                              dev=tmp_path / "dev.tsv", epochs=1, batch_size=16, max_seq_length=64,
                              learning_rate=1e-3, hidden_dropout_prob=0.1)
    assert dropped["loss"] != metrics["loss"]
    # The memory options: recomputation takes the same steps (same dev loss, bit for bit).
    recomputed = bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "rc.brt",
                                 dev=tmp_path / "dev.tsv", epochs=1, batch_size=16,
                                 max_seq_length=64, learning_rate=1e-3, recompute=True,
                                 freeze_embeddings=False)
    assert recomputed["loss"] == metrics["loss"]
    with pytest.raises(bertrt.Error, match="options.freeze_layers"):
        bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "bad.brt", freeze_layers=3)
    # Values a C field cannot hold are named, not cut to 32 bits or refused as 'bytes'.
    with pytest.raises(ValueError, match="'freeze_layers' = 4294967297 is outside"):
        bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "bad.brt",
                        freeze_layers=2**32 + 1)
    with pytest.raises(TypeError, match="'recompute' must be an int, got str"):
        bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "bad.brt", recompute="yes")
    with pytest.raises(TypeError, match="'labels' must be a str, got int"):
        bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "bad.brt", labels=3)
    assert not (tmp_path / "bad.brt").exists()
    # An exception in progress stops the run and comes back to the caller (ctypes printed and
    # dropped it; the run went on and wrote its file).
    with pytest.raises(ZeroDivisionError):
        bertrt.finetune(init, "sst2", tmp_path / "train.tsv", tmp_path / "bad.brt", epochs=1,
                        batch_size=16, max_seq_length=64, progress=lambda s: 1 / 0)
    assert not (tmp_path / "bad.brt").exists()
    # A dev set the task's metrics cannot score (STS-B's correlations need 2 examples) is refused
    # before training (it used to fail after training and lose the run), as the CLI refuses it.
    stsb = os.path.join(DATA, "glue/STS-B")
    head(os.path.join(stsb, "train.tsv"), tmp_path / "stsb.tsv", 17)
    head(os.path.join(stsb, "dev.tsv"), tmp_path / "stsb1.tsv", 2)
    with pytest.raises(bertrt.Error, match="stsb1.tsv: 1 example, and stsb's pearson and "
                                           "spearmanr need at least 2"):
        bertrt.finetune(init, "stsb", tmp_path / "stsb.tsv", tmp_path / "stsb.brt",
                        dev=tmp_path / "stsb1.tsv", max_steps=2, batch_size=8, max_seq_length=32,
                        progress=lambda s: no_steps.append(s["step"]))
    assert no_steps == [] and not (tmp_path / "stsb.brt").exists()


def test_predict_of_a_qa_model_returns_a_span_of_the_context(hf, tmp_path):
    out, _ = hf
    brt = tmp_path / "qa.brt"
    bertrt.convert(out / "st_qa", brt)
    m = bertrt.Model(brt)
    words = [w for w in (m.token(i) for i in range(m.config["vocab_size"])) if w.isalpha()]
    # Accents before the words: a str's offsets count characters (as the CLI's), a bytes' bytes.
    question, context = " ".join(words[:2]), "Ça été über " + " ".join(words[2:8])
    (p,) = m.predict([question], [context])
    assert 0 <= p["start"] < p["end"] <= len(context)
    assert p["answer"] == context[p["start"]:p["end"]] and p["answer"] in context
    (pb,) = m.predict([question.encode()], [context.encode()])
    assert pb["answer"] == p["answer"]
    assert (pb["start"], pb["end"]) == (len(context[:p["start"]].encode()),
                                        len(context[:p["end"]].encode()))
    with pytest.raises(TypeError, match="texts: expected a str, bytes or a list of them, got "
                                        "NoneType"):
        m.predict(None)
    with pytest.raises(ValueError, match="text_pairs\\[0\\]: no tokens"):
        m.predict([question], ["\u200b"])  # zero-width: the CLI refuses it too
    with pytest.raises(ValueError, match="texts\\[1\\]: no tokens"):
        m.predict([question, " "], [context, context])
    assert m.predict(np.array([question]), np.array([context])) == [p]  # any sequence of texts
    with pytest.raises(ValueError, match="text_pairs"):
        m.predict([question])
    # One window, no doc stride (the CLI's predict windows): the answer lies in the pieces that
    # fit max_seq_length, however long the context.
    long_context = " ".join(words[2:8] * 100)
    (p,) = m.predict([question], [long_context])
    T = min(128, m.config["max_position_embeddings"])
    kept = m.tokenize(question, long_context, T)
    assert len(kept["input_ids"]) == T
    end = kept["offsets"][kept["token_type_ids"] == 1, 1].max()  # where the kept context ends
    assert 0 <= p["start"] < p["end"] <= end < len(long_context.encode())


def test_version_and_library_load_errors():
    assert bertrt.__version__ == bertrt.version()  # the module and the library it loaded
    # ... which is CMake's project(VERSION) (tests/version_test.sh checks the rest).
    cmake = open(os.path.join(SRC, "CMakeLists.txt")).read()
    assert re.search(r"project\(bertrt VERSION ([0-9.]+)", cmake).group(1) == bertrt.__version__
    # A library that cannot be loaded, or one that is not libbertrt, is an ImportError saying
    # where its path came from (ctypes said only "cannot open shared object file").
    for lib, why in [("/nonexistent/libbertrt.so", "cannot load the C library "
                      "/nonexistent/libbertrt.so \\(from BERTRT_LIBRARY\\)"),
                     ("libm.so.6", "libm.so.6 \\(from BERTRT_LIBRARY\\) is not libbertrt")]:
        p = subprocess.run([sys.executable, "-c", "import bertrt"], capture_output=True,
                           text=True, env={**os.environ, "BERTRT_LIBRARY": lib})
        assert p.returncode != 0 and "ImportError" in p.stderr
        assert re.search(why, p.stderr), p.stderr


@pytest.fixture(scope="session")
def st(tmp_path_factory):
    """tests/reference/st_models.py's sentence-transformers folders, converted: an embedding model
    with prompts, one with Dense + Normalize, a cross-encoder, and a plain BERT (no head)."""
    out = tmp_path_factory.mktemp("st")
    rc = subprocess.call(["/usr/bin/python3", os.path.join(SRC, "tests/reference/st_models.py"),
                          "--out", str(out / "folders")], stdout=subprocess.DEVNULL)
    if rc == 77:
        pytest.skip("python3-torch missing")
    assert rc == 0
    paths = {}
    for name in ("prompts", "dense_normalize", "cross_encoder"):
        paths[name] = str(out / (name + ".brt"))
        bertrt.convert(str(out / "folders" / name), paths[name])
    return paths


def test_embed_shapes_norms_and_the_cli(st):
    with bertrt.Model(st["dense_normalize"]) as m:
        e = m.embed(["the cat sat on the mat .", "", "a dog"])
        assert e.shape == (3, 12) and e.dtype == np.float32
        assert np.allclose(np.linalg.norm(e, axis=1), 1, atol=1e-6)
        one = m.embed("a dog")  # a str is one row
        assert one.shape == (1, 12)
        # Alone or in a padded batch: the same values up to the GEMMs' summation order, which
        # the batch's shape picks (a few float32 ulps of a unit vector).
        assert np.allclose(one[0], e[2], rtol=0, atol=1e-6)
        d = m.embed(["a dog"], dimensions=5)
        assert d.shape == (1, 5) and abs(np.linalg.norm(d) - 1) < 1e-6
        raw = m.embed(["a dog"], dimensions=5, normalize=False)  # the Normalize module's output, cut
        assert np.allclose(raw[0], one[0][:5], rtol=0, atol=1e-7)
    if CLI:
        out = subprocess.run([CLI, "embed", "--model", st["dense_normalize"]], input="a dog\n",
                             stdout=subprocess.PIPE, text=True, check=True).stdout
        # The same library code on the same single row: the same bits.
        assert np.array_equal(np.array(json.loads(out)["embedding"], np.float32), one[0])


def test_embed_precision(st):
    with bertrt.Model(st["dense_normalize"]) as m:
        texts = ["the cat sat on the mat .", "", "a dog", "stocks fell"]
        e = m.embed(texts)
        u = m.embed(texts, precision="ubinary")
        assert u.dtype == np.uint8 and u.shape == (4, 2)  # 12 dimensions: 2 bytes a row
        assert np.array_equal(u, np.packbits(e > 0, axis=-1))
        b = m.embed(texts, precision="binary")
        assert b.dtype == np.int8 and np.array_equal(b.astype(int), u.astype(int) - 128)
        i8 = m.embed(texts, precision="int8")
        assert i8.dtype == np.int8 and i8.shape == (4, 12)
        # Each dimension's range over the embeddings themselves: its lowest value → −128.
        assert (i8.min(axis=0) == -128).all()
        cal = m.embed(texts, precision="uint8", calibration_embeddings=e)
        assert np.array_equal(cal, m.embed(texts, precision="uint8"))
        ranges = np.vstack((e.min(axis=0), e.max(axis=0)))
        assert np.array_equal(cal, bertrt.quantize_embeddings(e, "uint8", ranges=ranges))
        with pytest.raises(ValueError, match="precision: expected one of"):
            m.embed(texts, precision="fp16")
        with pytest.raises(ValueError, match="ranges: expected shape"):
            bertrt.quantize_embeddings(e, "int8", ranges=np.zeros((2, 3)))
        with pytest.raises(bertrt.Error, match="not a finite range"):
            bertrt.quantize_embeddings(e, "int8", ranges=np.vstack((e.max(axis=0), e.min(axis=0))))


def test_embed_prompts_and_bad_arguments(st):
    with bertrt.Model(st["prompts"]) as m:
        q = m.embed(["a dog"], prompt_name="query")
        assert q.shape == (1, 36)
        with pytest.raises(bertrt.Error, match="prompt-name 'nope' is not one of the model's prompts"):
            m.embed(["a dog"], prompt_name="nope")
        with pytest.raises(bertrt.Error, match="dimensions 37 is outside"):
            m.embed(["a dog"], dimensions=37)
        with pytest.raises(ValueError, match="dimensions"):
            m.embed(["a dog"], dimensions=0)
        with pytest.raises(TypeError, match="normalize"):
            m.embed(["a dog"], normalize=1)
        with pytest.raises(TypeError, match="texts"):
            m.embed(None)
        with pytest.raises(ValueError, match=r"texts\[1\]: not encodable"):
            m.embed(["a", "\udcff"])
        with pytest.raises(bertrt.Error, match="not valid UTF-8|not UTF-8"):
            m.embed([b"\xff"])
        with pytest.raises(bertrt.Error, match="has a none head, not a cross-encoder"):
            m.rerank("q", ["a"])
        assert m.embed([]).shape == (0, 36)


def test_rerank_order_and_raw_scores(st):
    with bertrt.Model(st["cross_encoder"]) as r:
        passages = ["the cat sat on the mat .", "a dog is big", "she is unable to run"]
        best = r.rerank("the cat", passages)
        assert sorted(x["index"] for x in best) == [0, 1, 2]
        assert [x["score"] for x in best] == sorted((x["score"] for x in best), reverse=True)
        assert all(0 < x["score"] < 1 for x in best)
        logits = {x["index"]: x["score"] for x in r.rerank("the cat", passages, raw_scores=True)}
        for x in best:  # sigmoid(logit)
            assert abs(x["score"] - 1 / (1 + np.exp(-logits[x["index"]]))) < 1e-6
        assert len(r.rerank("the cat", passages, top_k=1)) == 1
        with pytest.raises(bertrt.Error, match="no sentence-embedding head"):
            r.embed(["a"])
        assert len(r.embed(["a"], pooling="mean")[0]) == 36  # any encoder pools on request


def test_convert_to_sentence_transformers(st, tmp_path):
    out = tmp_path / "st"
    bertrt.convert(st["dense_normalize"], str(out), to="sentence-transformers")
    modules = json.load(open(out / "modules.json"))
    assert [m["type"].rsplit(".", 1)[1] for m in modules] == ["Transformer", "Pooling", "Dense",
                                                              "Dense", "Normalize"]
    with pytest.raises(bertrt.Error, match="has no sentence-embedding head"):
        bertrt.convert(st["cross_encoder"], str(tmp_path / "x"), to="sentence-transformers")
