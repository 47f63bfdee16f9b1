"""LoRA adapters from Python: Model(..., adapter=), Model.set_adapter, bertrt.Adapter (the C API's
bertrt_adapter_load / bertrt_model_set_adapter). Several adapters over one base in one Model give
what each gives alone, switching back and forth is exact, and an adapter of another base is
refused. Adapters are written by the CLI (`bertrt finetune --lora-r`) on SST-2 rows."""
import os
import subprocess

import numpy as np
import pytest

import bertrt

SRC = os.environ.get("BERTRT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("BERTRT_CLI", "")
DATA = os.environ.get("BERTRT_DATA", os.path.join(SRC, "..", "shared", "data"))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    vocab = os.path.join(DATA, "vocab/bert-base-uncased-vocab.txt")
    sst2 = os.path.join(DATA, "glue/SST-2/train.tsv")
    if not (os.path.exists(vocab) and os.path.exists(sst2) and CLI):
        pytest.skip("no SST-2 data or BERTRT_CLI")
    t = tmp_path_factory.mktemp("adapters")
    with open(sst2) as f, open(t / "train.tsv", "w") as g:
        for _, line in zip(range(97), f):
            g.write(line)
    run = lambda *a: subprocess.run([CLI, *map(str, a)], check=True, capture_output=True)
    for name, seed in (("base", 3), ("other", 4)):
        run("init", "--preset", "tiny", "--vocab", vocab, "--seed", seed, "-o", t / f"{name}.brt")
    common = ["--model", t / "base.brt", "--task", "sst2", "--train", t / "train.tsv",
              "--max-steps", 3, "--batch-size", 16, "--learning-rate", "1e-2", "--lora-r", 4]
    run("finetune", *common, "--lora-target", "query,value", "-o", t / "a.brt")
    run("finetune", *common, "--lora-target", "dense", "--seed", 7, "-o", t / "b.brt")
    return t


def ids(m):
    return m.encode(["a gorgeous, witty movie", "the plot is thin and the acting worse"])


def test_two_adapters_in_one_model_give_what_each_gives_alone(files):
    alone = {}
    for x in ("a", "b"):
        with bertrt.Model(files / "base.brt", num_threads=1, adapter=files / f"{x}.brt") as m:
            assert m.heads["kind"] == "sequence_classification" and m.task == "sst2"
            assert m.labels == ["negative", "positive"]
            alone[x] = m.forward(**ids(m))["logits"]
    assert not np.array_equal(alone["a"], alone["b"])
    m = bertrt.Model(files / "base.brt", num_threads=1)
    assert m.heads["kind"] == "none" and m.adapter is None
    a, b = m.load_adapter(files / "a.brt"), m.load_adapter(files / "b.brt")
    for _ in range(3):
        m.set_adapter(a)
        assert m.adapter is a and m.heads["num_labels"] == 2
        np.testing.assert_array_equal(m.forward(**ids(m))["logits"], alone["a"])
        m.set_adapter(b)
        np.testing.assert_array_equal(m.forward(**ids(m))["logits"], alone["b"])
    assert [p["label"] for p in m.predict(["a gorgeous, witty movie"])][0] in m.labels
    m.set_adapter(None)
    assert m.heads["kind"] == "none" and m.task == "" and "logits" not in m.forward(**ids(m))
    # A path works as well as an Adapter, and an Adapter serves another Model of the base.
    m.set_adapter(files / "a.brt")
    np.testing.assert_array_equal(m.forward(**ids(m))["logits"], alone["a"])
    with bertrt.Model(files / "base.brt", num_threads=1) as m2:
        m2.set_adapter(b)
        b.close()  # m2 keeps its own reference
        np.testing.assert_array_equal(m2.forward(**ids(m2))["logits"], alone["b"])
    m.close()


def test_adapter_of_another_base_is_refused(files):
    m = bertrt.Model(files / "other.brt")
    with pytest.raises(bertrt.Error, match="a.brt was trained on another base"):
        m.set_adapter(files / "a.brt")
    assert m.heads["kind"] == "none" and m.adapter is None
    with pytest.raises(bertrt.Error, match="was trained on another base"):
        bertrt.Model(files / "other.brt", adapter=files / "a.brt")
    # Loaded for its own base, set on the other.
    with bertrt.Model(files / "base.brt") as base:
        a = base.load_adapter(files / "a.brt")
    with pytest.raises(bertrt.Error, match="was trained on another base"):
        m.set_adapter(a)
    with pytest.raises(bertrt.Error, match="a model file, not a LoRA adapter"):
        m.set_adapter(files / "base.brt")
    with pytest.raises(bertrt.Error, match="no such file"):
        m.set_adapter(files / "missing.brt")
    with pytest.raises(TypeError, match="expected a bertrt.Model"):
        bertrt.Adapter("base.brt", files / "a.brt")
