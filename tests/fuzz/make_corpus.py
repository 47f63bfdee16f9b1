#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (tests/fuzz/corpus/<target>/): small slices of the real files
in ../shared/ckpt and ../shared/data. The .brt seeds come from bertrt-convert / bertrt on the
keras-bert-tiny and tiny_bert checkpoints (pass the build folder). Re-run to regenerate:
    tests/fuzz/make_corpus.py [BUILD_DIR]     (default build/)
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.environ.get("BERTRT_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
CKPT, DATA = os.path.join(SHARED, "ckpt"), os.path.join(SHARED, "data")
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
OUT = os.path.join(HERE, "corpus")


def put(target, name, data):
    # Seeds carry no .brt/.safetensors extension: .gitignore keeps model files out of the repo,
    # these few-KB slices are test inputs (libFuzzer ignores names).
    for ext in (".brt", ".safetensors"):
        if name.endswith(ext):
            name = name[: -len(ext)] + "_" + ext[1:]
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def read(path, limit=None):
    with open(path, "rb") as f:
        return f.read() if limit is None else f.read(limit)


def head_lines(path, n):
    with open(path, "rb") as f:
        return b"".join(f.readline() for _ in range(n))


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def write_safetensors(path, tensors):
    """name -> (shape, float values), stored F32."""
    header, blobs, off = {}, [], 0
    for name, (shape, values) in tensors.items():
        b = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def st_folder(hf, st):
    """A sentence-transformers folder around the Hugging Face export `hf` (hidden size 4): cls+mean
    pooling without the prompt, Dense 8 -> 3 (Tanh, bias), Dense 3 -> 2 (Identity, no bias),
    Normalize, two prompts with a default, dot similarity, max_seq_length 12, lower-cased."""
    def dump(rel, obj):
        os.makedirs(os.path.dirname(os.path.join(st, rel)), exist_ok=True)
        with open(os.path.join(st, rel), "w") as f:
            json.dump(obj, f, indent=2)
    shutil.copytree(hf, st)
    with open(os.path.join(st, "config.json")) as f:
        cfg = json.load(f)
    cfg["architectures"] = ["BertModel"]  # its cls.* tensors dropped by --drop-unknown
    dump("config.json", cfg)
    types = ["Transformer", "Pooling", "Dense", "Dense", "Normalize"]
    paths = ["", "1_Pooling", "2_Dense", "3_Dense", "4_Normalize"]
    dump("modules.json", [{"idx": i, "name": str(i), "path": p, "type": "sentence_transformers.models." + t}
                          for i, (t, p) in enumerate(zip(types, paths))])
    os.makedirs(os.path.join(st, "4_Normalize"))
    dump("sentence_bert_config.json", {"max_seq_length": 12, "do_lower_case": True})
    modes = ["cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens", "weightedmean_tokens", "lasttoken"]
    dump("1_Pooling/config.json", dict({"word_embedding_dimension": 4, "include_prompt": False},
                                       **{"pooling_mode_" + m: m in ("cls_token", "mean_tokens") for m in modes}))
    dump("2_Dense/config.json", {"in_features": 8, "out_features": 3, "bias": True,
                                 "activation_function": "torch.nn.modules.activation.Tanh"})
    write_safetensors(os.path.join(st, "2_Dense/model.safetensors"),
                      {"linear.weight": ([3, 8], [0.05 * (i % 7 - 3) for i in range(24)]),
                       "linear.bias": ([3], [0.1, -0.1, 0.0])})
    dump("3_Dense/config.json", {"in_features": 3, "out_features": 2, "bias": False,
                                 "activation_function": "torch.nn.modules.linear.Identity"})
    write_safetensors(os.path.join(st, "3_Dense/model.safetensors"),
                      {"linear.weight": ([2, 3], [0.5, -0.25, 0.125, -0.5, 0.25, 1.0])})
    dump("config_sentence_transformers.json", {"prompts": {"query": "query: ", "passage": ""},
                                                "default_prompt_name": "query", "similarity_fn_name": "dot"})


def embedding_seed(convert, t):
    """keras-bert-tiny with an embedding head (st_folder), converted as bertrt-convert reads
    sentence-transformers folders; needs t/hf (the --to hf export of the tiny model)."""
    st_folder(os.path.join(t, "hf"), os.path.join(t, "st"))
    subprocess.run([convert, "st", "-o", "emb.brt", "-q", "--drop-unknown"], cwd=t, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # relative source_path
    return read(os.path.join(t, "emb.brt"))


def brt_seeds():
    bertrt, convert = os.path.join(BUILD, "bertrt"), os.path.join(BUILD, "bertrt-convert")
    with tempfile.TemporaryDirectory() as t:
        k = os.path.join(t, "k.brt")
        run(convert, os.path.join(CKPT, "tf1/keras-bert-tiny"), "-o", k, "-q")
        run(convert, os.path.join(CKPT, "hf/inference-server_tiny_bert"), "-o",
            os.path.join(t, "tiny_bf16.brt"), "--dtype", "bf16", "-q")
        corpus, tsv = os.path.join(t, "c.txt"), os.path.join(t, "s.tsv")
        with open(corpus, "wb") as f:
            f.write(read(os.path.join(DATA, "corpus/enwiki/enwiki_valid_1000docs.txt"), 3000))
        with open(tsv, "wb") as f:
            f.write(head_lines(os.path.join(DATA, "glue/SST-2/train.tsv"), 5))
        small = ["--max-steps", "1", "--batch-size", "2", "--max-seq-length", "16"]
        run(bertrt, "pretrain", "--model", k, "--corpus", corpus, *small, "-o", os.path.join(t, "pt.brt"))
        ft = os.path.join(t, "ft.brt")
        run(bertrt, "finetune", "--model", k, "--task", "sst2", "--train", tsv, *small, "-o", ft)
        run(bertrt, "finetune", "--model", k, "--task", "sst2", "--train", tsv, *small, "--qat", "int8",
            "-o", os.path.join(t, "qat.brt"))
        run(bertrt, "quantize", "--model", ft, "--task", "sst2", "--calibration", tsv,
            "--max-seq-length", "16", "-o", os.path.join(t, "q.brt"))
        run(convert, "--to", "hf", k, "-o", os.path.join(t, "hf"), "-q")
        for src, name in [("k.brt", "keras_tiny_f32.brt"), ("tiny_bf16.brt", "tiny_bert_bf16.brt"),
                          ("pt.brt", "keras_tiny_pretrain_state.brt"), ("ft.brt", "keras_tiny_sst2.brt"),
                          ("qat.brt", "keras_tiny_sst2_qat.brt"), ("q.brt", "keras_tiny_sst2_int8.brt")]:
            for target in ("brt_loader", "brt_structured"):  # the second's mutator edits fields
                put(target, name, read(os.path.join(t, src)))
        put("safetensors", "keras_tiny_export.safetensors", read(os.path.join(t, "hf/model.safetensors")))
        emb = embedding_seed(convert, t)
        for target in ("brt_loader", "brt_structured"):
            put(target, "keras_tiny_embedding.brt", emb)


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    brt_seeds()

    st = os.path.join(CKPT, "safetensors-samples")
    for n in sorted(os.listdir(st)):
        if n.endswith(".safetensors"):
            put("safetensors", n, read(os.path.join(st, n)))

    # torch.save files: zip and legacy; their pickles (data.pkl, or the whole legacy stream) for
    # the unpickler alone.
    ts = os.path.join(CKPT, "torch-samples")
    picks = ["test.pt", "test_with_key.pt", "src_pytorch_tests_reader_test_data_bfloat16.pt",
             "src_pytorch_tests_reader_test_data_checkpoint.pt",
             "src_pytorch_tests_reader_test_data_legacy_shared_storage.pt",
             "src_pytorch_tests_reader_test_data_legacy_with_offsets.pt",
             "src_pytorch_tests_reader_test_data_nested_dict.pt",
             "src_pytorch_tests_reader_test_data_scalar.pt",
             "src_pytorch_tests_reader_test_data_special_values.pt",
             "src_pytorch_tests_reader_test_data_tensor_4d.pt",
             "pytorch-tests_tests_batch_norm_batch_norm2d.pt", "pytorch-tests_tests_integer_integer.pt"]
    files = [os.path.join(ts, n) for n in picks]
    files += [os.path.join(CKPT, "hf/camphr_ner_bert/pytorch_model.bin"),
              os.path.join(CKPT, "hf/camphr_bert_2019-10-20a/pytorch_model.bin")]
    for i, p in enumerate(files):
        data = read(p)
        name = os.path.basename(os.path.dirname(p)) + ".bin" if p.endswith(".bin") else os.path.basename(p)
        put("torch_reader", name, data)
        if data[:2] == b"PK":
            with zipfile.ZipFile(p) as z:
                pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
                put("pickle", name + ".data.pkl", z.read(pkl))
        else:
            put("pickle", name + ".legacy", data[:4096])

    # TF: .index SSTables (also the bundle target's seeds), the small bundles' shards too.
    idx = [("tf1/keras-bert-tiny/bert_model.ckpt.index", "keras_tiny.index"),
           ("tf-bundles/tf-serving_saved_model_half_plus_two_cpu/variables.index", "half_plus_two.index"),
           ("tf-bundles/little_ruan_iris_2shards/model.ckpt.index", "iris_2shards.index"),
           ("tf1-index/news_text_class/bert_model.ckpt.index", "news_text_class.index"),
           ("tf1-index/covbert/bert_model.ckpt.index", "covbert.index")]
    for p, n in idx:
        put("tf_sstable", n, read(os.path.join(CKPT, p)))
    for p, n in idx[:3]:
        put("tf_bundle", n, read(os.path.join(CKPT, p)))

    # Configs: HF config.json and TF bert_config.json.
    for p in ["hf/camphr_bert_2019-10-20a/config.json", "hf/camphr_ner_bert/config.json",
              "hf/inference-server_tiny_bert/config.json", "tf1/keras-bert-tiny/bert_config.json",
              "tf1-index/google-chinese_L-12_H-768_A-12/bert_config.json",
              "tf1-index/google-uncased_L-24_H-1024_A-16/bert_config.json"]:
        put("config_json", p.split("/")[1] + "_" + os.path.basename(p), read(os.path.join(CKPT, p)))

    # Tokenizer: flags byte + text (built-in vocab) or flags + vocab.txt + NUL + text.
    enwiki = read(os.path.join(DATA, "corpus/enwiki/enwiki_valid_1000docs.txt"), 1500)
    sst = head_lines(os.path.join(DATA, "glue/SST-2/dev.tsv"), 8)
    put("tokenizer", "enwiki_lower", b"\x01" + enwiki)
    put("tokenizer", "sst2_cased_max8", b"\x80" + sst)
    put("tokenizer", "unicode_mix", b"\x03" + "Café naïve İstanbul 中文 ß ﬁ 🙂\u200b x\u0301\t"
        "Hello, world! unaffable".encode() + b" \xff\xfe bad \xc3 utf8 " + b"a" * 300)
    put("tokenizer", "camphr_vocab", b"\x01" + read(os.path.join(CKPT, "hf/camphr_ner_bert/vocab.txt"))
        + b"\0" + sst)
    put("tokenizer", "keras_vocab", b"\x21" + read(os.path.join(CKPT, "tf1/keras-bert-tiny/vocab.txt"))
        + b"\0all work and no play makes jack a dull boy\tjack")

    # GLUE TSVs: the first byte picks the preset in sorted glue_task_names() order.
    tasks = {"sst2": "SST-2/train.tsv", "cola": "CoLA/train.tsv", "mrpc": "MRPC/train.tsv",
             "stsb": "STS-B/train.tsv", "rte": "RTE/train.tsv", "qnli": "QNLI/dev.tsv"}
    names = list(tasks)  # the order of glue_task_names() (src/tasks/tsv_presets.cpp)
    for i, t in enumerate(names):
        p = os.path.join(DATA, "glue", tasks[t])
        if os.path.exists(p):
            put("glue_tsv", t, bytes([i]) + head_lines(p, 12))

    conll = os.path.join(DATA, "conll2003/eng.train")
    put("conll", "eng_train_head", head_lines(conll, 80))
    put("conll", "eng_testa_head", head_lines(os.path.join(DATA, "conll2003/eng.testa"), 40))

    with open(os.path.join(DATA, "squad_v1.1/dev-v1.1-articles-00-39.json"), encoding="utf-8") as f:
        squad = json.load(f)
    for a in range(2):
        art = dict(squad["data"][a])
        art["paragraphs"] = [dict(p, qas=p["qas"][:3]) for p in art["paragraphs"][:2]]
        put("squad_json", f"article{a}", json.dumps({"data": [art], "version": "1.1"}).encode())

    put("forward_jsonl", "ids", b'{"input_ids": [2, 5, 6, 7, 3]}\n'
        b'{"input_ids": [2, 5, 3, 8, 3], "token_type_ids": [0, 0, 0, 1, 1], "attention_mask": [1, 1, 1, 1, 1]}\n'
        b'{"input_ids": [2, 9, 3, 0, 0], "attention_mask": [1, 1, 1, 0, 0]}\n')

    for p, n in [("enwiki/enwiki_valid_1000docs.txt", "enwiki"), ("austen/persuasion.txt", "austen"),
                 ("gutenberg/blake-poems.txt", "blake")]:
        put("corpus", n + "_split", b"\x02" + read(os.path.join(DATA, "corpus", p), 1200))
        put("corpus", n + "_nsp", b"\x05" + read(os.path.join(DATA, "corpus", p), 800))

    embedding_index_seeds()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c ^= b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 & -(c & 1))
    return c ^ 0xFFFFFFFF


def embedding_index(values, dim, options):
    """An embedding index file (src/embed/embedding_index.h, version 1)."""
    opts = options.encode()
    head = b"BRTINDEX" + struct.pack("<IIQQQIII", 1, dim, len(values) // dim, 1234, 56, 0xDEADBEEF,
                                     0x01020304, len(opts)) + opts
    head += b"\0" * (-len(head) % 64)
    body = head + struct.pack("<%df" % len(values), *values)
    return body + struct.pack("<I", crc32c(body))


def embedding_index_seeds():
    """Seeds of fuzz_embedding_index: the first byte 0 (CRC taken as it is) or 1 (recomputed)."""
    opts = '{"dimensions":0,"normalize":true,"prompt_name":"","prompt":null,"pooling":""}'
    put("embedding_index", "three_by_four", b"\0" + embedding_index(
        [0.5, -0.5, 0.5, -0.5, 1.0, 0.0, 0.0, 0.0, 0.25, 0.25, -0.75, 0.5], 4, opts))
    put("embedding_index", "empty_recrc", b"\1" + embedding_index([], 8, ""))


if __name__ == "__main__":
    main()
