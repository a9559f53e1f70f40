"""The Python bindings (python/ember) against the shared models: export through the C++
exporter, run, compare with PyTorch's reference outputs; metadata; errors as exceptions.
Run by //python:python_test (pytest from Debian; PYTHONPATH holds the package built by Bazel)."""
import os

import numpy as np
import pytest

import ember

SHARED = os.environ.get("EMBER_SHARED_DIR", "")


def shared_model(name):
    d = os.path.join(SHARED, "models", name)
    if not SHARED or not os.path.isfile(os.path.join(d, "model.pt2")):
        pytest.skip("shared/ data not found")
    return d


def rel_l2(got, want):
    got = got.astype(np.float64)
    want = want.astype(np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


@pytest.mark.parametrize("backend", ["portable", "xnnpack"])
def test_mobilenet_v2_matches_pytorch(tmp_path, backend):
    d = shared_model("mobilenet_v2")
    pte = tmp_path / f"mv2_{backend}.pte"
    summary = ember.export(os.path.join(d, "model.pt2"), pte, backend=backend)
    assert "partition:" in summary
    m = ember.Module(str(pte))
    x = np.load(os.path.join(d, "input_0.npy"))
    (out,) = m.forward([x])
    want = np.load(os.path.join(d, "output_0.npy"))
    assert out.shape == want.shape and out.dtype == np.float32
    assert rel_l2(out, want) < 1e-4
    # run_method is execute under the name the C++ API uses; the same numbers.
    (again,) = m.run_method("forward", [x])
    np.testing.assert_array_equal(again, out)


def test_outputs_own_their_memory(tmp_path):
    d = shared_model("small_cnn")
    pte = tmp_path / "small.pte"
    ember.export(os.path.join(d, "model.pt2"), pte)
    m = ember.Module(str(pte))
    x = np.load(os.path.join(d, "input_0.npy"))
    (first,) = m.forward([x])
    kept = first.copy()
    m.forward([np.zeros_like(x)])  # a second run must not change the first result
    np.testing.assert_array_equal(first, kept)
    assert rel_l2(first, np.load(os.path.join(d, "output_0.npy"))) < 1e-4


def test_method_meta(tmp_path):
    d = shared_model("bert_tiny")
    pte = tmp_path / "bert.pte"
    ember.export(os.path.join(d, "model.pt2"), pte, backend="xnnpack")
    m = ember.Module(str(pte))
    assert m.method_names() == ["forward"]
    meta = m.method_meta("forward")
    assert meta["name"] == "forward"
    inputs = [np.load(os.path.join(d, f"input_{i}.npy")) for i in range(len(meta["inputs"]))]
    assert len(inputs) == 2
    for info, x in zip(meta["inputs"], inputs):
        assert info["shape"] == x.shape and info["dtype"] == x.dtype and info["dynamic"] is False
    outs = m.forward(inputs)
    assert len(outs) == len(meta["outputs"])
    for info, o in zip(meta["outputs"], outs):
        assert info["shape"] == o.shape and info["dtype"] == o.dtype
    assert rel_l2(outs[0], np.load(os.path.join(d, "output_0.npy"))) < 1e-4


def test_errors_are_exceptions_with_ember_messages(tmp_path):
    d = shared_model("small_cnn")
    pte = tmp_path / "small.pte"
    ember.export(os.path.join(d, "model.pt2"), pte)
    m = ember.Module(str(pte))
    x = np.load(os.path.join(d, "input_0.npy"))
    with pytest.raises(TypeError, match="dtype"):
        m.forward([x.astype(np.complex64)])
    with pytest.raises(ValueError, match="C-contiguous"):
        m.forward([x[..., ::-1]])  # a reversed view: same shape, not contiguous
    with pytest.raises(RuntimeError, match="input 0"):
        m.forward([np.zeros((1, 2, 3), np.float32)])  # wrong rank: the runtime's message
    with pytest.raises(RuntimeError, match="takes 1 inputs|input"):
        m.forward([])
    with pytest.raises(RuntimeError, match="nope.pte"):
        ember.Module(str(tmp_path / "nope.pte"))
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip archive")
    with pytest.raises(RuntimeError, match="bad.pt2"):
        ember.export(bad, tmp_path / "bad.pte")
