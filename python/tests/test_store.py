"""The Python package against brute force and against the C++ library's own
answers: what a crawler written in Python relies on."""

import ast
import inspect
import random
import threading
import time
from pathlib import Path

import pytest

import fpstore
from fpstore import _fpstore

QUICK = "The quick brown fox jumps over the lazy dog."

def make_page(seed: int, words: int = 400) -> str:
    """A page of made-up words, the same for the same seed."""
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghijklmnop") for _ in range(6)) for _ in range(300)]
    return " ".join(rng.choice(vocabulary) for _ in range(words))


PAGE = make_page(1)


def popcount(x: int) -> int:
    return bin(x).count("1")


def planted_corpus(seed: int, groups: int, bits: int = 64):
    """Random fingerprints of `bits` bits, each with variants 1 to bits / 12 bits away."""
    rng = random.Random(seed)
    docs = []
    next_id = 1
    for _ in range(groups):
        base = rng.getrandbits(bits)
        docs.append((next_id, base))
        next_id += 1
        for _ in range(rng.randint(0, 3)):
            fp = base
            for bit in rng.sample(range(bits), rng.randint(1, bits // 12)):
                fp ^= 1 << bit
            docs.append((next_id, fp))
            next_id += 1
    return docs


def brute_force(docs, query: int, k: int):
    return sorted(i for i, fp in docs if popcount(fp ^ query) <= k)


# ---- Fingerprints ------------------------------------------------------------------


def test_fingerprints_equal_the_libraries_golden_values():
    # tests/fingerprinter_test.cc, GoldenFingerprints.
    assert fpstore.fingerprint(QUICK) == 0x8212868318D29267
    assert fpstore.fingerprint(QUICK, window=3) == 0x75A5B714549A617A
    assert fpstore.fingerprint("") == 0
    f = fpstore.Fingerprinter(window=3)
    assert f.fingerprint(QUICK) == 0x75A5B714549A617A
    assert f.options.window == 3 and f.options.weighting == "tf"
    assert f.tokens("Hello, World") == ["hello", "world"]


def test_sketches_estimate_similarity():
    a = fpstore.sketch(PAGE)
    b = fpstore.sketch(PAGE + " one more sentence at the end")
    c = fpstore.sketch(make_page(2))
    assert a.fingerprint == fpstore.fingerprint(PAGE)
    assert len(a.signature) == 64
    assert fpstore.estimate_similarity(a.signature, a.signature) == 1.0
    assert fpstore.estimate_similarity(a.signature, b.signature) > 0.8
    assert fpstore.estimate_similarity(a.signature, c.signature) < 0.75  # coarse when low
    assert fpstore.estimate_similarity(b"", a.signature) is None
    assert fpstore.hamming_distance(0b1011, 0b0001) == 2


def test_fingerprints_are_ints_of_up_to_128_bits(tmp_path):
    wide = (1 << 127) | 5
    assert fpstore.hamming_distance(wide, 5) == 1
    assert fpstore.hamming_distance((1 << 128) - 1, 0) == 128
    assert fpstore.Sketch(wide).fingerprint == wide
    with pytest.raises(TypeError):
        fpstore.hamming_distance(1 << 128, 0)
    with pytest.raises(TypeError):
        fpstore.hamming_distance(-1, 0)
    narrow = fpstore.sketch(PAGE)
    wide_sketch = fpstore.sketch(PAGE, bits=128)
    assert wide_sketch.signature == narrow.signature
    assert wide_sketch.fingerprint.bit_length() > 64

    class Index:  # what numpy's integers look like to the binding
        def __index__(self):
            return 5

    assert fpstore.hamming_distance(Index(), 4) == 1
    assert fpstore.Sketch(Index()).fingerprint == 5
    with pytest.raises(TypeError):
        fpstore.hamming_distance(True, 0)
    assert fpstore.Fingerprinter(bits=128).options.bits == 128
    # tests/fingerprinter_test.cc's golden value, as one int
    fox = "The quick brown fox jumps over the lazy dog."
    assert fpstore.fingerprint(fox, window=3, bits=128) == 0x9C191798E28CB3C7DA976DEBF49010B8
    with pytest.raises(fpstore.InvalidArgumentError, match="bits"):
        fpstore.Fingerprinter(bits=32)
    with fpstore.open(str(tmp_path / "db")) as store:
        with pytest.raises(fpstore.InvalidArgumentError, match="128-bit fingerprint"):
            store.insert(1, wide)
        with pytest.raises(fpstore.InvalidArgumentError, match="2\\*\\*128"):
            store.insert(1, 1 << 128)
        store.insert(2, (1 << 64) - 1)
        assert [m.id for m in store.query((1 << 64) - 1, distance=0)] == [2]
        assert store.stats().documents == 1


def test_bad_fingerprint_options_are_value_errors():
    with pytest.raises(fpstore.InvalidArgumentError):
        fpstore.Fingerprinter(window=0)
    with pytest.raises(ValueError, match="weighting"):
        fpstore.Fingerprinter(weighting="idf")
    with pytest.raises(fpstore.InvalidArgumentError):
        fpstore.estimate_similarity(b"short", b"short")


# ---- Exactness ---------------------------------------------------------------------


@pytest.mark.parametrize("bits,blocks,distance", [(64, 6, 3), (64, 5, 2), (128, 8, 6)])
def test_queries_match_brute_force(tmp_path, bits, blocks, distance):
    docs = planted_corpus(seed=blocks * 10 + distance, groups=400, bits=bits)
    with fpstore.open(
        str(tmp_path / "db"), bits=bits, blocks=blocks, distance=distance
    ) as store:
        assert store.plan.bits == bits
        store.insert_many(docs[: len(docs) // 2])
        for doc_id, fp in docs[len(docs) // 2 :]:
            store.insert(doc_id, fp, b"meta-%d" % doc_id)
        queries = [fp for _, fp in docs[::7]] + [random.Random(3).getrandbits(bits)]
        for k in range(distance + 1):
            answers = store.query_many(queries, distance=k)
            for query, matches in zip(queries, answers):
                assert sorted(m.id for m in matches) == brute_force(docs, query, k)
                for m in matches:
                    assert m.distance == popcount(m.fingerprint ^ query)
                    assert m.similarity is None  # bare fingerprints: distance alone
            single = store.query(queries[0], distance=k)
            assert sorted(m.id for m in single) == brute_force(docs, queries[0], k)
        pairs = {(p.first, p.second) for p in store.find_all()}
        expected = {
            (a, b)
            for i, (a, fa) in enumerate(docs)
            for b, fb in docs[i + 1 :]
            if popcount(fa ^ fb) <= distance
        }
        assert pairs == {(min(a, b), max(a, b)) for a, b in expected}
        # Clusters are the connected components of those pairs.
        clustered = [sorted(c) for c in store.clusters()]
        assert sum(len(c) for c in clustered) == len({i for p in expected for i in p})
        for cluster in clustered:
            assert len(cluster) >= 2
        store.verify()


def test_removal_replacement_and_get(tmp_path):
    with fpstore.open(str(tmp_path / "db")) as store:
        store.insert(7, 0x1234, b"first")
        assert store.get(7).metadata == b"first"
        store.insert(7, 0xFFFF0000, "second")  # replaces, metadata as UTF-8
        doc = store.get(7)
        assert (doc.id, doc.fingerprint, doc.metadata) == (7, 0xFFFF0000, b"second")
        assert store.query(0x1234, distance=0) == []
        assert store.remove(7) is True
        assert store.remove(7) is False
        assert store.get(7) is None
        assert store.stats().documents == 0


def test_documents_carry_their_times(tmp_path):
    with fpstore.open(str(tmp_path / "db")) as store:
        before = int(time.time())
        store.insert(1, 0x1234)
        assert before <= store.get(1).time <= int(time.time())
        store.insert(2, 0x1235, b"two", time=1764576000)
        store.insert_many([(3, 0x1237, None, 5), (4, 0xF0F0, b"four")])
        assert [store.get(i).time for i in (2, 3)] == [1764576000, 5]
        assert before <= store.get(4).time
        checked = store.check_and_insert(5, 0x1236, time=7)
        assert {m.id: m.time for m in checked.matches} == {1: store.get(1).time, 2: 1764576000, 3: 5}
        assert store.get(5).time == 7
        with store.bulk_loader() as loader:
            loader.add(6, 0x9999, time=8)
            loader.add_many([(7, 0x8888, None, 9)])
        assert [store.get(i).time for i in (6, 7)] == [8, 9]
        with pytest.raises(ValueError, match="from 0 to"):
            store.insert(8, 1, time=-1)
        with pytest.raises(TypeError, match="time"):
            store.insert(8, 1, time="yesterday")
        assert store.get(8) is None


def test_expire_and_a_retention(tmp_path):
    with fpstore.open(str(tmp_path / "db")) as store:
        store.insert_many([(1, 0x10, None, 10), (2, 0x20, None, 20), (3, 0x30, None, 30)])
        stats = store.stats()
        assert (stats.oldest_time, stats.newest_time, stats.retention_seconds) == (10, 30, 0)
        assert store.expire(25) == 2
        assert [d.id for d in store.documents()] == [3]
        assert store.expire(25) == 0
    # A retention of a day: a page fetched two days ago is never returned.
    now = int(time.time())
    with fpstore.open(str(tmp_path / "kept"), retention_seconds=86400) as store:
        store.insert_many([(1, 0x10, None, now - 2 * 86400), (2, 0x11, None, now)])
        assert [m.id for m in store.query(0x10, distance=3)] == [2]
        assert store.get(1) is None
        assert store.stats().retention_seconds == 86400
    with pytest.raises(fpstore.InvalidArgumentError, match="retention"):
        fpstore.open(str(tmp_path / "kept"), retention_seconds=60)


def test_writes_count_what_arrives_past_the_retention_and_checks_refresh(tmp_path):
    now = int(time.time())
    day = 86400
    path = str(tmp_path / "db")
    with fpstore.open(path, retention_seconds=day) as store:
        stats = store.insert_many([(1, 0x10, None, now - 2 * day), (2, 0x1000, None, now - 10)])
        assert (stats.added, stats.replaced, stats.past_retention) == (2, 0, 1)
        stats = store.insert(2, 0x1000, time=now - 5)
        assert (stats.added, stats.replaced, stats.past_retention) == (0, 1, 0)
        late = store.check_and_insert(3, 0xABC000, time=now - 3 * day)
        assert late.inserted and late.past_retention
        assert store.get(3) is None
        # Off by default: a match keeps its own time.
        seen = store.check_and_insert(6, 0x1001, if_no_match=True, time=now)
        assert [m.id for m in seen.matches] == [2] and not seen.inserted
        assert store.get(2).time == now - 5
    with fpstore.open(path, refresh_matches=True) as store:
        seen = store.check_and_insert(6, 0x1001, if_no_match=True, time=now)
        assert [m.id for m in seen.matches] == [2] and not seen.inserted
        assert store.get(2).time == now


def test_bulk_loads_count_what_arrives_past_the_retention(tmp_path):
    now = int(time.time())
    with fpstore.open(str(tmp_path / "db"), retention_seconds=3600) as store:
        loader = store.bulk_loader()
        loader.add_many([(1, 0x40, None, 1), (2, 0x50, None, now), (3, 0x60)])
        stats = loader.finish()
        assert (stats.added, stats.replaced, stats.past_retention) == (3, 0, 1)


# ---- Texts and confirmation ----------------------------------------------------------


def test_check_and_insert_confirms_near_copies_by_similarity(tmp_path):
    page = PAGE
    near_copy = page + " updated on tuesday"
    other = make_page(3)
    with fpstore.open(str(tmp_path / "db")) as store:
        first = store.check_and_insert(1, page, b"https://a.example/1", if_no_match=True)
        assert first.inserted and first.matches == []
        second = store.check_and_insert(2, near_copy, b"https://a.example/2", if_no_match=True)
        assert not second.inserted
        assert [m.id for m in second.matches] == [1]
        assert second.matches[0].similarity > 0.9
        assert second.matches[0].metadata == b"https://a.example/1"
        assert store.get(2) is None
        third = store.check_and_insert(3, other, None, if_no_match=True)
        assert third.inserted
        # A threshold above the pair's similarity rejects the candidate.
        assert store.query(near_copy, min_similarity=1.0) == []
        assert [m.id for m in store.query(near_copy)] == [1]
        # The stored signature is the text's.
        assert store.get(1).signature == store.sketch(page).signature
        assert store.stats().min_similarity == pytest.approx(0.9)


def test_options_are_recorded_and_checked(tmp_path):
    path = str(tmp_path / "db")
    with fpstore.open(path, blocks=5, distance=2, window=3, min_similarity=0.8) as store:
        assert (store.plan.blocks, store.plan.distance, store.plan.tables) == (5, 2, 10)
        assert store.fingerprint_options.window == 3
    with fpstore.open(path) as store:
        stats = store.stats()
        assert (stats.blocks, stats.distance, stats.fingerprint.window) == (5, 2, 3)
        assert stats.min_similarity == pytest.approx(0.8)
    with pytest.raises(fpstore.InvalidArgumentError, match="blocks"):
        fpstore.open(path, blocks=6)
    # One fingerprint option checks that one; the others are the store's.
    with fpstore.open(path, window=3) as store:
        assert store.fingerprint_options.window == 3
    with pytest.raises(fpstore.InvalidArgumentError, match="fingerprint"):
        fpstore.open(path, window=2)
    with pytest.raises(ValueError, match="durability"):
        fpstore.open(path, durability="fast")


# ---- Errors ------------------------------------------------------------------------


def test_errors_are_exceptions_with_the_status_message(tmp_path):
    with pytest.raises(fpstore.NotFoundError, match="no store at"):
        fpstore.open(str(tmp_path / "absent"), create=False)
    with pytest.raises(KeyError):
        fpstore.open(str(tmp_path / "absent"), create=False)
    (tmp_path / "notastore").mkdir()
    (tmp_path / "notastore" / "file.txt").write_text("x")
    with pytest.raises(fpstore.InvalidArgumentError, match="not an fpstore store"):
        fpstore.open(str(tmp_path / "notastore"))
    path = str(tmp_path / "db")
    with fpstore.open(path) as writer:
        with pytest.raises(fpstore.BusyError, match="in use"):
            fpstore.open(path)
        writer.insert(1, 42)
        with fpstore.open(path, read_only=True) as reader:
            assert reader.get(1).fingerprint == 42
            with pytest.raises(fpstore.NotSupportedError):
                reader.insert(2, 43)
        with pytest.raises(fpstore.InvalidArgumentError, match="distance"):
            writer.query(42, distance=64)
        with pytest.raises(TypeError):
            writer.insert(-1, 42)  # ids are from 0 to 2**64 - 1
        with pytest.raises(TypeError, match="content"):
            writer.insert(3, 4.5)
        with pytest.raises(TypeError):
            writer.insert_many([(1,)])
        with pytest.raises(TypeError):
            writer.insert_many(["ab"])
        with pytest.raises(TypeError, match="id"):
            writer.insert_many([(-1, 5)])
        assert (fpstore.Sketch(1) == None) is False  # noqa: E711
        assert fpstore.Sketch(1) == fpstore.Sketch(1) and fpstore.Sketch(1) != fpstore.Sketch(2)
    assert writer.closed
    with pytest.raises(fpstore.InvalidArgumentError, match="closed"):
        writer.get(1)
    writer.close()  # closing twice is harmless


# ---- Bulk loads, stats, verify, repair, checkpoint, destroy ---------------------------


def test_repair_verifies_an_embedded_store_and_destroy_store_removes_it(tmp_path):
    path = str(tmp_path / "db")
    with fpstore.open(path) as store:
        store.insert_many(planted_corpus(seed=3, groups=50))
        store.repair()  # its writes are atomic: nothing to mend, so it verifies
        store.repair(threads=2)
        with pytest.raises(fpstore.BusyError):
            fpstore.destroy_store(path)  # open for writing here
    with fpstore.open(path, read_only=True) as reader:
        reader.repair()
    fpstore.destroy_store(path)
    assert not Path(path).exists()
    with pytest.raises(fpstore.NotFoundError, match="no store at"):
        fpstore.destroy_store(path)
    with pytest.raises(fpstore.NotFoundError):
        fpstore.open(path, create=False)


def test_bulk_loader_then_checkpoint(tmp_path):
    docs = planted_corpus(seed=11, groups=300)
    path = str(tmp_path / "db")
    with fpstore.open(path) as store:
        with store.bulk_loader() as loader:
            loader.add_many(docs[:-1])
            loader.add(docs[-1][0], docs[-1][1], b"last")
            assert loader.added == len(docs)
        assert store.stats().documents == len(docs)
        # An abandoned load changes nothing.
        with pytest.raises(RuntimeError):
            with store.bulk_loader() as loader:
                loader.add(10**9, 1)
                raise RuntimeError("the crawl stopped")
        assert store.get(10**9) is None
        # finish() inside the block: leaving it does not finish again.
        with store.bulk_loader() as loader:
            loader.add(10**9 + 2, 3)
            assert loader.finish().added == 1
        assert loader.added == 1
        assert store.remove(10**9 + 2)
        # A finished loader refuses more work, and the store closes once it is done.
        loader = store.bulk_loader()
        loader.add(10**9 + 1, 2)
        with pytest.raises(fpstore.InvalidArgumentError, match="bulk loader"):
            store.close()
        stats = loader.finish()
        assert (stats.added, stats.replaced, stats.superseded) == (1, 0, 0)
        with pytest.raises(fpstore.InvalidArgumentError, match="finished"):
            loader.add(1, 1)
        del loader
        store.checkpoint(str(tmp_path / "copy"))
        store.verify()
    with fpstore.open(str(tmp_path / "copy"), read_only=True) as copy:
        assert copy.stats().documents == len(docs) + 1
        assert {d.id for d in copy.documents()} == {i for i, _ in docs} | {10**9 + 1}
        assert copy.get(docs[-1][0]).metadata == b"last"


def test_threads_share_a_store(tmp_path):
    docs = planted_corpus(seed=5, groups=200)
    errors = []
    with fpstore.open(str(tmp_path / "db")) as store:
        store.insert_many(docs)

        def worker(offset: int) -> None:
            try:
                for doc_id, fp in docs[offset::4]:
                    ids = sorted(m.id for m in store.query(fp))
                    if ids != brute_force(docs, fp, 3):
                        errors.append((doc_id, ids))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


# ---- The type stubs ----------------------------------------------------------------


def test_stubs_name_every_public_member_of_the_extension():
    stub = Path(fpstore.__file__).with_name("_fpstore.pyi")
    tree = ast.parse(stub.read_text())
    stubbed = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            stubbed[node.name] = {
                n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
        elif isinstance(node, ast.FunctionDef):
            stubbed[node.name] = set()
    for name, value in vars(_fpstore).items():
        if name.startswith("_"):
            continue
        assert name in stubbed, f"{name} is missing from _fpstore.pyi"
        if inspect.isclass(value):
            members = {m for m in vars(value) if not m.startswith("_")}
            assert members <= stubbed[name], f"{name}: {members - stubbed[name]} not stubbed"
