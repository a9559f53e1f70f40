"""The Python bindings (python/ember) against the shared models: export through the C++
exporter, run, compare with PyTorch's reference outputs; metadata; errors as exceptions.
Run by //python:python_test (pytest from Debian; PYTHONPATH holds the package built by Bazel)."""
import importlib.util
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
    assert meta["delegates"] and set(meta["delegates"]) == {"xnnpack"}
    assert meta["planned_bytes"] > 0
    text = repr(m)
    sig = ", ".join(f"{np.load(os.path.join(d, f'input_{i}.npy')).dtype}[{','.join(map(str, np.load(os.path.join(d, f'input_{i}.npy')).shape))}]"
                    for i in range(2))
    assert f"forward({sig})" in text, text
    assert "delegates: xnnpack x1" in text and "KiB" in text, text
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
    # A reversed view (same shape, not contiguous) is copied into row-major order, not refused.
    flipped = x[..., ::-1]
    np.testing.assert_array_equal(m.forward([flipped])[0], m.forward([np.ascontiguousarray(flipped)])[0])
    with pytest.raises(RuntimeError, match="input 0"):
        m.forward([np.zeros((1, 2, 3), np.float32)])  # wrong rank: the runtime's message
    with pytest.raises(RuntimeError, match="takes 1 inputs, 0 given"):
        m.forward([])
    with pytest.raises(RuntimeError, match="nope.pte"):
        ember.Module(str(tmp_path / "nope.pte"))
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip archive")
    with pytest.raises(RuntimeError, match="bad.pt2"):
        ember.export(bad, tmp_path / "bad.pte")
    with pytest.raises(TypeError, match="example_inputs"):
        ember.export(os.path.join(d, "model.pt2"), tmp_path / "x.pte", example_inputs=(x,))
    with pytest.raises(TypeError, match="ExportedProgram"):
        ember.export(object(), tmp_path / "x.pte")
    m.close()
    with pytest.raises(RuntimeError, match="closed"):
        m.forward([x])


def repo_file(*parts):
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", *parts)


def test_program_of_several_methods(tmp_path):
    import subprocess
    d = repo_file("test", "models", "encoder_decoder")
    pte = tmp_path / "seq2seq.pte"
    summary = ember.export({"encode": os.path.join(d, "encode", "model.pt2"),
                            "decode": os.path.join(d, "decode", "model.pt2")}, pte, backend="xnnpack")
    assert "2 methods" in summary and "stored once" in summary, summary
    m = ember.Module(pte)
    assert m.method_names() == ["encode", "decode"]
    assert "encode(int64[1,12])" in repr(m) and "decode(int64[1,8], float32[1,12,32])" in repr(m), repr(m)
    src = np.load(os.path.join(d, "encode", "input_0.npy"))
    tgt = np.load(os.path.join(d, "decode", "input_0.npy"))
    (memory,) = m.execute("encode", [src])
    assert rel_l2(memory, np.load(os.path.join(d, "encode", "output_0.npy"))) < 1e-4
    (logits,) = m.execute("decode", [tgt, memory])  # Ember's encoder output feeds the decoder
    assert rel_l2(logits, np.load(os.path.join(d, "decode", "output_0.npy"))) < 1e-4
    shown = subprocess.run([ember.cli_path(), "inspect", str(pte)], capture_output=True, text=True).stdout
    assert "read by encode, decode" in shown, shown
    # Bundled cases per method: PyTorch's outputs, a 1% perturbed one, one computed by the
    # portable kernels.
    want = np.load(os.path.join(d, "decode", "output_0.npy"))
    bundled = tmp_path / "seq2seq_bundled.pte"
    ember.export({"encode": os.path.join(d, "encode", "model.pt2"), "decode": os.path.join(d, "decode", "model.pt2")},
                 bundled, backend="xnnpack",
                 bundle=[("decode", (tgt, memory), want), ("decode", (tgt, memory), want * 1.01),
                         ("encode", src, None), "encode:" + os.path.join(d, "encode")])
    report = ember.Module(bundled).verify()
    assert [(c.method, c.passed) for c in report] == [("decode", True), ("decode", False), ("encode", True),
                                                      ("encode", True)], report.cases
    with pytest.raises(RuntimeError, match="METHOD:DIR"):
        ember.export({"encode": os.path.join(d, "encode", "model.pt2")}, tmp_path / "x.pte",
                     bundle=[os.path.join(d, "encode")])


class DLPackOnly:
    """An array that offers only the DLPack protocol (as JAX, CuPy-on-host or TensorFlow do)."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_call_forms_and_dlpack_inputs(tmp_path):
    d = shared_model("small_cnn")
    pte = tmp_path / "small.pte"
    ember.export(os.path.join(d, "model.pt2"), pte, backend="xnnpack")
    x = np.load(os.path.join(d, "input_0.npy"))
    want = np.load(os.path.join(d, "output_0.npy"))
    with ember.Module(pte) as m:
        (ref,) = m.forward([x])
        assert rel_l2(ref, want) < 1e-4
        for got in (m.forward(x), m.forward((x,)), m(x), m.execute("forward", [x]), m.forward(DLPackOnly(x))):
            assert isinstance(got, list) and len(got) == 1 and isinstance(got[0], np.ndarray)
            np.testing.assert_array_equal(got[0], ref)


def test_threads_give_the_same_numbers(tmp_path):
    d = shared_model("mobilenet_v2")
    pte = tmp_path / "mv2.pte"
    ember.export(os.path.join(d, "model.pt2"), pte, backend="xnnpack")
    x = np.load(os.path.join(d, "input_0.npy"))
    (one,) = ember.Module(pte).forward(x)
    m = ember.Module(pte, threads=2)
    assert "2 threads" in repr(m)
    (two,) = m.forward(x)
    assert rel_l2(two, one) < 1e-6
    assert rel_l2(two, np.load(os.path.join(d, "output_0.npy"))) < 1e-4


def test_verify_bundled_cases(tmp_path):
    d = shared_model("small_cnn")
    x = np.load(os.path.join(d, "input_0.npy"))
    want = np.load(os.path.join(d, "output_0.npy"))
    pte = tmp_path / "bundled.pte"
    # PyTorch's outputs, the same perturbed by 1%, and outputs the exporter computes itself.
    ember.export(os.path.join(d, "model.pt2"), pte, backend="xnnpack",
                 bundle=[(x, want), (x, want * 1.01), (x * 0.5, None)])
    report = ember.Module(pte).verify()
    assert len(report) == 3 and not report and not report.passed
    good, perturbed, computed = report.cases
    assert good.passed and good.method == "forward" and good.rel_l2_error < 1e-4, good
    assert not perturbed.passed and perturbed.rel_l2_error > 5e-3 and perturbed.message, perturbed
    assert computed.passed, computed
    assert "1 failed" in repr(report)
    # Loose enough tolerances pass the perturbed case too.
    assert ember.Module(pte).verify(rtol=0.05, atol=0.05)
    plain = tmp_path / "plain.pte"
    ember.export(os.path.join(d, "model.pt2"), plain)
    with pytest.raises(RuntimeError, match="verify"):
        ember.Module(plain).verify()


def test_profile(tmp_path):
    d = shared_model("small_cnn")
    pte = tmp_path / "small.pte"
    ember.export(os.path.join(d, "model.pt2"), pte, backend="xnnpack")
    x = np.load(os.path.join(d, "input_0.npy"))
    p = ember.Module(pte).profile(x, iterations=4, warmup=1)
    assert len(p.latency_ms) == 4 and all(t > 0 for t in p.latency_ms)
    assert p.median_ms > 0 and "runs" in repr(p)
    assert "ms" in p.report and p.events
    assert any(e.get("cat") == "delegate_op" for e in p.events)  # operators inside XNNPACK are timed
    assert '"traceEvents"' in p.trace_json()


def test_quantize_with_calibration_samples(tmp_path):
    import subprocess
    d = shared_model("mobilenet_v2")
    x = np.load(os.path.join(d, "input_0.npy"))
    want = np.load(os.path.join(d, "output_0.npy"))
    samples = [x, np.ascontiguousarray(x[..., ::-1]), x * 0.8]  # the picture, mirrored, darker
    pte = tmp_path / "mv2_int8.pte"
    summary = ember.export(os.path.join(d, "model.pt2"), pte, backend="xnnpack", quantize="int8", calibrate=samples)
    assert "int8" in summary
    (got,) = ember.Module(pte).forward(x)
    # The same samples as the command line's directory form give the same program's numbers.
    cal = tmp_path / "cal"
    for k, sample in enumerate(samples):
        (cal / str(k)).mkdir(parents=True)
        np.save(cal / str(k) / "input_0.npy", sample)
    by_cli = tmp_path / "mv2_int8_cli.pte"
    done = subprocess.run([ember.cli_path(), "export", os.path.join(d, "model.pt2"), "-o", str(by_cli),
                           "--backend", "xnnpack", "--quantize", "int8", "--calibrate", str(cal)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    np.testing.assert_array_equal(ember.Module(by_cli).forward(x)[0], got)
    # Quantized, not float (these seeded random weights quantize coarsely: only a loose bound).
    assert 1e-4 < rel_l2(got, want) < 0.5


def test_external_weights(tmp_path):
    import subprocess
    d = shared_model("small_cnn")
    pt2 = os.path.join(d, "model.pt2")
    x = np.load(os.path.join(d, "input_0.npy"))
    inline = tmp_path / "inline.pte"
    ember.export(pt2, inline)
    (want,) = ember.Module(inline).forward(x)
    assert rel_l2(want, np.load(os.path.join(d, "output_0.npy"))) < 1e-4
    # The weights in a data file, by ember.export and by the command line itself.
    pte, ptd = tmp_path / "small.pte", tmp_path / "small.ptd"
    summary = ember.export(pt2, pte, external_weights=ptd)
    assert "small.ptd" in summary and ptd.is_file(), summary
    assert pte.stat().st_size < inline.stat().st_size
    by_cli, cli_ptd = tmp_path / "cli.pte", tmp_path / "cli.ptd"
    done = subprocess.run([ember.cli_path(), "export", pt2, "-o", str(by_cli), "--external-weights", str(cli_ptd)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # Without its data file the program does not open, and says what it needs.
    with pytest.raises(RuntimeError, match=r"small.ptd.*ember.Module\(path, data="):
        ember.Module(pte)
    # With it (one path as str or PathLike, or a list): the inline program's numbers exactly.
    for program, data in ((pte, ptd), (pte, str(ptd)), (pte, [ptd]), (by_cli, (str(cli_ptd),))):
        with ember.Module(program, data=data) as m:
            np.testing.assert_array_equal(m.forward(x)[0], want)
    m = ember.Module(pte, data=ptd, allow_updated_weights=True)
    assert m.data == [str(ptd)] and "small.ptd" in repr(m)
    np.testing.assert_array_equal(m.forward(x)[0], want)
    # Module.profile runs `ember profile` with the same data file.
    assert len(m.profile(x, iterations=2, warmup=1).latency_ms) == 2
    # Another model's data file holds none of these tensors; bad `data` values are refused.
    other, other_ptd = tmp_path / "mlp.pte", tmp_path / "mlp.ptd"
    ember.export(os.path.join(shared_model("dynamic_mlp"), "model.pt2"), other, external_weights=other_ptd)
    with pytest.raises(RuntimeError, match="none of the 1 data file"):
        ember.Module(pte, data=other_ptd)
    with pytest.raises(RuntimeError, match="missing.ptd"):
        ember.Module(pte, data=tmp_path / "missing.ptd")
    with pytest.raises(ValueError, match="data is empty"):
        ember.Module(pte, data=[])
    with pytest.raises(TypeError, match="data is a .ptd path"):
        ember.Module(pte, data=3)
    with pytest.raises(ValueError, match="data="):
        ember.Module(inline, allow_updated_weights=True)


def test_command_line_ships_with_the_package():
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "ember", "--version"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ember {ember.__version__}"
    assert os.access(ember.cli_path(), os.X_OK)
    assert os.path.isfile(ember.library_path())


try:
    import torch
except ImportError:
    torch = None


@pytest.mark.skipif(torch is None, reason="torch is not installed (the device machine runs these)")
@pytest.mark.parametrize("form", ["module", "exported_program"])
def test_export_from_torch_objects_and_torch_tensors(tmp_path, form):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(8, 4)).eval()
    x = torch.randn(2, 3, 16, 16)
    pte = tmp_path / f"{form}.pte"
    if form == "module":
        ember.export(model, pte, "xnnpack", example_inputs=(x,))
    else:
        ember.export(torch.export.export(model, (x,)), pte, "xnnpack")
    m = ember.Module(pte)
    (got,) = m.forward(x)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    with torch.no_grad():
        want = model(x)
    assert rel_l2(got.numpy(), want.numpy()) < 1e-4
    # Non-contiguous and grad-requiring tensors are accepted; numpy in gives numpy out.
    (again,) = m.forward(x.requires_grad_().transpose(2, 3).contiguous().transpose(2, 3))
    assert torch.equal(again, got)
    (as_numpy,) = m.forward(x.detach().numpy())
    assert isinstance(as_numpy, np.ndarray)


@pytest.mark.skipif(torch is None or importlib.util.find_spec("torchvision") is None,
                    reason="the example needs torch and torchvision (the device machine runs it)")
def test_example_mobilenet_v2(tmp_path):
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python", "mobilenet_v2.py")
    done = subprocess.run([sys.executable, script, "--out", str(tmp_path), "--threads", "2", "--int8"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("OK") and "delegates: xnnpack" in done.stdout, done.stdout
