# SPDX-License-Identifier: BSD-3-Clause
"""Session 58: NextTokenData is saved and loaded as TokenData is (an .npz of plain arrays with a
format version, checked on load), and load_data reads a hand-written mask='causal'."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg


def _same(a: sg.NextTokenData, b: sg.NextTokenData) -> None:
    for name in ("tokens", "valid", "labels", "last", "embeddings"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert (a.n, a.T, a.V, a.d) == (b.n, b.T, b.V, b.d)


@pytest.mark.parametrize("how", ["functions", "methods"])
def test_next_token_data_round_trips_exactly(tmp_path, how) -> None:
    """Regression: NextTokenData had no save/load. Ragged sequences (left padding), Gaussian
    embeddings (every float64 bit) and the generator's data come back equal; the sequences
    read back are the ones given."""
    sequences = [[0, 3, 1], [2, 1], [4]]
    E = np.random.default_rng(1).normal(size=(5, 3)) / 7
    ragged = sg.NextTokenData(sequences, np.array([3, 2, 4]), E)
    for k, data in enumerate((ragged, sg.random_next_token_data(6, 4, 5, 8, seed=0))):
        path = tmp_path / f"d{k}"  # .npz appended on save, found on load
        if how == "functions":
            sg.save_next_token_data(data, path)
            back = sg.load_next_token_data(path)
        else:
            data.save(path)
            back = sg.NextTokenData.load(path)
        _same(data, back)
    read = [row[row >= 0].tolist() for row in sg.load_next_token_data(tmp_path / "d0").tokens]
    assert read == sequences


def test_next_token_file_layout(tmp_path) -> None:
    """The archive holds plain arrays: the format version and the three arrays, no pickle."""
    data = sg.NextTokenData([[0, 1], [1]], np.array([1, 1]), np.eye(2))
    data.save(tmp_path / "d.npz")
    with np.load(tmp_path / "d.npz", allow_pickle=False) as f:
        assert sorted(f.files) == ["embeddings", "labels", "svmgeo_next_token_format", "tokens"]
        assert int(f["svmgeo_next_token_format"]) == 1
        np.testing.assert_array_equal(f["tokens"], [[0, 1], [-1, 1]])


def test_each_loader_names_the_other_kind(tmp_path) -> None:
    """A token dataset given to load_next_token_data, or a next-token one to load_data, is
    refused with the reader that takes it."""
    sg.random_data(3, 4, 5, seed=0).save(tmp_path / "tok.npz")
    sg.random_next_token_data(3, 3, 4, 4, seed=0).save(tmp_path / "ntp.npz")
    with pytest.raises(
        sg.ProblemError, match=r"token dataset \(TokenData\): read it with svmgeo\.load_data"
    ):
        sg.load_next_token_data(tmp_path / "tok.npz")
    with pytest.raises(sg.ProblemError, match=r"read it with svmgeo\.load_next_token_data"):
        sg.load_data(tmp_path / "ntp.npz")


@pytest.mark.parametrize(
    ("entries", "match"),
    [
        ({"tokens": [[0, -1, 1]]}, r"row 0 of entry 'tokens' is \[0, -1, 1\]: -1 pads a sequence on the left only"),
        ({"tokens": [[0, 1, -1]]}, r"row 0 .*its last entry is a token"),
        ({"tokens": [[0, 1.0]]}, r"entry 'tokens' must be an int array of shape \(n, T\)"),
        ({"tokens": [[0, 2]]}, r"outside \[0, 2\).*sequences\[i\] is row i of the entry 'tokens'"),
        ({"tokens": [[0, 0]]}, r"labels\[0\] = 1 does not occur"),
        ({"extra": [1]}, r"unknown entries \['extra'\]"),
        ({"svmgeo_next_token_format": 2}, r"format version 2, written by a newer svmgeo"),
        ({"svmgeo_next_token_format": 0}, r"format version 0, which no svmgeo writes"),
    ],
)  # fmt: skip
def test_load_next_token_data_checks_the_file(tmp_path, entries, match) -> None:
    """Hand-written or damaged files are refused with what is wrong and how to write them."""
    good = {
        "svmgeo_next_token_format": 1,
        "tokens": [[0, 1]],
        "labels": [1],
        "embeddings": np.eye(2),
    }
    arrays = {k: np.asarray(v) for k, v in {**good, **entries}.items()}
    np.savez(tmp_path / "f.npz", **arrays)
    with pytest.raises(sg.ProblemError, match=match) as info:
        sg.load_next_token_data(tmp_path / "f.npz")
    assert str(info.value).startswith("load_next_token_data(")


def test_save_next_token_data_refuses_bad_arguments(tmp_path) -> None:
    data = sg.NextTokenData([[0, 1]], np.array([1]), np.eye(2))
    with pytest.raises(
        sg.ProblemError, match=r"save_next_token_data takes a svmgeo\.NextTokenData"
    ):
        sg.save_next_token_data(sg.random_data(2, 2, 2, seed=0), tmp_path / "x.npz")
    with pytest.raises(sg.ProblemError, match="is a directory"):
        sg.save_next_token_data(data, tmp_path)
    with pytest.raises(sg.ProblemError, match="no such file"):
        sg.load_next_token_data(tmp_path / "missing.npz")


def test_load_data_reads_a_hand_written_causal_mask(tmp_path) -> None:
    """Regression: a file with mask='causal' (the text TokenData takes) was refused ("mask must
    be ... bool"); it reads as the causal mask, M[k, t] = [t <= k]."""
    X = np.random.default_rng(0).normal(size=(2, 3, 4))
    np.savez(tmp_path / "c.npz", svmgeo_format=1, X=X, v=np.ones(4), query="all", mask="causal")
    data = sg.load_data(tmp_path / "c.npz")
    expected = np.array([[t <= k for t in range(3)] for k in range(3)])
    np.testing.assert_array_equal(data.mask, np.broadcast_to(expected, (2, 3, 3)))
    np.testing.assert_array_equal(data.X, X)


@pytest.mark.parametrize("mask", ["tril", np.array(["causal", "causal"])])
def test_load_data_refuses_other_mask_text_saying_how_to_write_it(tmp_path, mask) -> None:
    X = np.random.default_rng(0).normal(size=(2, 3, 4))
    np.savez(tmp_path / "c.npz", svmgeo_format=1, X=X, v=np.ones(4), query="all", mask=mask)
    with pytest.raises(
        sg.ProblemError, match=r"entry 'mask' must be a bool array .* or the text 'causal'"
    ):
        sg.load_data(tmp_path / "c.npz")


@pytest.mark.parametrize(
    ("entries", "match"),
    [
        ({"labels": [[1]]}, r"labels must be an int array of shape \(1,\)"),
        ({"embeddings": np.array([[1.0, np.nan], [0.0, 1.0]])}, r"embeddings must be a finite"),
    ],
)
def test_load_next_token_data_explains_sequences_only_where_it_names_them(
    tmp_path, entries, match
) -> None:
    """Regression (review): every error of a loaded file ended with "Here sequences[i] is row
    i of the entry 'tokens'...", also those of labels and embeddings, which name no sequence."""
    good = {
        "svmgeo_next_token_format": 1,
        "tokens": [[0, 1]],
        "labels": [1],
        "embeddings": np.eye(2),
    }
    np.savez(tmp_path / "f.npz", **{k: np.asarray(v) for k, v in {**good, **entries}.items()})
    with pytest.raises(sg.ProblemError, match=match) as info:
        sg.load_next_token_data(tmp_path / "f.npz")
    assert "sequences[" not in str(info.value) and "row i of the entry" not in str(info.value)
