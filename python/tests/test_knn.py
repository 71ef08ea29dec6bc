"""parray.knn and FlatIndex against an FP64 brute force in NumPy; the vector files."""
import numpy as np
import pytest

import parray


def brute_force(base, queries, k, metric):
    x, q = base.astype(np.float64), queries.astype(np.float64)
    keys = ((q[:, None, :] - x[None, :, :]) ** 2).sum(-1) if metric == "l2" else -(q @ x.T)
    order = np.argsort(keys, axis=1, kind="stable")[:, :k]  # ties by index
    chosen = np.take_along_axis(keys, order, axis=1)
    return (chosen if metric == "l2" else -chosen), order


@pytest.mark.parametrize("metric", ["l2", "ip"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_knn_equals_brute_force(rng, metric, dtype):
    base = (rng.random((500, 24)) * 2 - 1).astype(dtype)
    queries = (rng.random((37, 24)) * 2 - 1).astype(dtype)
    distances, indices = parray.knn(base, queries, 10, metric=metric)
    want_distances, want_indices = brute_force(base, queries, 10, metric)
    assert distances.dtype == dtype and indices.dtype == np.int64 and indices.shape == (37, 10)
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_allclose(distances, want_distances, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=1e-6)


def test_knn_on_offset_data_and_strided_inputs(rng):
    """Far from the origin, where the FP32 expansion alone cannot rank the vectors."""
    base = (rng.random((400, 16)) * 2 - 1 + 1000).astype(np.float32)
    queries = np.asfortranarray(base[::40] + np.float32(0.001))
    distances, indices = parray.knn(base, queries, 5)
    want_distances, want_indices = brute_force(base, queries, 5, "l2")
    np.testing.assert_array_equal(indices, want_indices)
    np.testing.assert_allclose(distances, want_distances, rtol=1e-5)


def test_k_equal_to_n(rng):
    base = (rng.random((9, 3)) + 0.5).astype(np.float32)
    _, indices = parray.knn(base, base[:2], 9)
    assert sorted(indices[0]) == list(range(9))


def test_flat_index_matches_knn_over_the_concatenated_base(rng):
    parts = [(rng.random((n, 12)) * 2 - 1).astype(np.float32) for n in (50, 70, 30)]
    queries = (rng.random((11, 12)) * 2 - 1).astype(np.float32)
    index = parray.FlatIndex(12, metric="ip")
    for p in parts:
        index.add(p)
    assert index.ntotal == 150
    parts[0][:] = 0  # the index holds its own copy
    distances, indices = index.search(queries, 4)
    whole = np.concatenate([index._base])
    want_distances, want_indices = brute_force(whole, queries, 4, "ip")
    np.testing.assert_array_equal(indices, want_indices)
    assert np.all(indices < 150)
    np.testing.assert_allclose(distances, want_distances, rtol=1e-6, atol=1e-6)
    index.reset()
    assert index.ntotal == 0


@pytest.mark.parametrize("write,read,dtype", [
    (parray.write_fvecs, parray.read_fvecs, np.float32),
    (parray.write_ivecs, parray.read_ivecs, np.int32),
    (parray.write_bvecs, parray.read_bvecs, np.uint8),
])
def test_vector_files_round_trip(tmp_path, rng, write, read, dtype):
    vectors = (rng.random((6, 5)) * 100 + 1).astype(dtype)
    path = str(tmp_path / "v")
    write(path, vectors)
    back = read(path)
    assert back.dtype == dtype
    np.testing.assert_array_equal(back, vectors)
    np.testing.assert_array_equal(read(path, max_n=2), vectors[:2])


def test_fvecs_layout_is_the_texmex_one(tmp_path, rng):
    vectors = (rng.random((3, 4)) + 0.5).astype(np.float32)
    records = np.concatenate([np.full((3, 1), 4, np.int32).view(np.float32), vectors], axis=1)
    path = tmp_path / "x.fvecs"
    path.write_bytes(records.tobytes())
    np.testing.assert_array_equal(parray.read_fvecs(str(path)), vectors)
