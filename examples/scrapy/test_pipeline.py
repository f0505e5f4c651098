"""A real Scrapy crawl of pages served on loopback through
NearDuplicatePipeline, checked against brute force: no two kept pages are
near-duplicates, every dropped page is a near-duplicate of a kept one, and
what was kept is one page of each family the corpus was made of. A second
crawl of the same site, with one new near-copy, keeps the same pages."""

import functools
import http.server
import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import fpstore

HERE = Path(__file__).resolve().parent
DISTANCE = 3
MIN_SIMILARITY = 0.9
NAV = "Home Products Documentation Downloads Community Blog About Contact"


def body(seed: int, words: int = 300) -> list:
    rng = random.Random(seed)
    vocabulary = ["".join(rng.choice("abcdefghijklmnopqrs") for _ in range(7)) for _ in range(400)]
    return [rng.choice(vocabulary) for _ in range(words)]


def make_site(root: Path):
    """Families of pages: a page and its near-copies (the same page, a word
    changed, a line added). Returns {file name: family}."""
    families = {}
    for family in range(12):
        words = body(family)
        variants = [words, list(words), words[:150] + ["revised"] + words[151:],
                    words + "last updated on tuesday".split()]
        for v, text in enumerate(variants[: 1 + family % 4]):
            families[f"f{family}-v{v}.html"] = family
            (root / f"f{family}-v{v}.html").write_text(
                f"<html><body><nav>{NAV}</nav><p>{' '.join(text)}</p></body></html>")
    # Two pages that share half their text are different pages.
    half = body(100)[:150]
    for v, seed in enumerate((101, 102)):
        name = f"half-{v}.html"
        families[name] = 100 + v
        (root / name).write_text(
            f"<html><body><nav>{NAV}</nav><p>{' '.join(half + body(seed)[:150])}</p></body></html>")
    write_index(root, families)
    return families


def write_index(root: Path, families):
    links = "".join(f'<a href="{name}">{name}</a> ' for name in sorted(families))
    (root / "index.html").write_text(f"<html><body>{links}</body></html>")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    families = make_site(root)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, families, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def crawl(base: str, store: Path, out: Path):
    arrivals, kept = out / "arrivals.jsonl", out / "kept.jsonl"
    for f in (arrivals, kept):
        f.unlink(missing_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH")]))
    run = subprocess.run(
        [sys.executable, str(HERE / "crawl_pages.py"), base + "index.html", str(store),
         str(arrivals), str(kept)],
        env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    read = lambda f: [json.loads(line) for line in f.read_text().splitlines()]  # noqa: E731
    return read(arrivals), read(kept), run.stderr


def near(a: fpstore.Sketch, b: fpstore.Sketch) -> bool:
    return (fpstore.hamming_distance(a.fingerprint, b.fingerprint) <= DISTANCE
            and fpstore.estimate_similarity(a.signature, b.signature) >= MIN_SIMILARITY)


def check_against_brute_force(arrivals, kept, families):
    name = lambda item: item["url"].rsplit("/", 1)[1]  # noqa: E731
    sketches = {name(i): fpstore.sketch(i["text"]) for i in arrivals}
    # The corpus is as designed: pages of a family are near-duplicates of each other, of no
    # other page, so one page of each is kept in whatever order they arrive.
    for a in sketches:
        for b in sketches:
            if a != b:
                assert near(sketches[a], sketches[b]) == (families[a] == families[b]), (a, b)
    kept_names = {name(i) for i in kept}
    dropped = {name(i) for i in arrivals} - kept_names
    assert len(arrivals) == len(families)
    for a in kept_names:
        for b in kept_names:
            assert a == b or not near(sketches[a], sketches[b]), f"{a} and {b} both kept"
    for d in dropped:
        assert any(near(sketches[d], sketches[k]) for k in kept_names), f"{d} dropped alone"
    # One page of each family is kept.
    assert sorted(families[k] for k in kept_names) == sorted(set(families.values()))
    return dropped


def test_a_crawl_drops_exactly_the_near_duplicates(site, tmp_path):
    root, families, base = site
    store = tmp_path / "dedup.fps"
    arrivals, kept, log = crawl(base, store, tmp_path)
    dropped = check_against_brute_force(arrivals, kept, families)
    assert len(dropped) == len(families) - len(set(families.values()))
    assert log.count("near-duplicate of http://127.0.0.1") == len(dropped)

    # The store persists: a second crawl keeps the same pages, and a new page
    # that copies one from the first crawl is dropped.
    (root / "late-copy.html").write_text((root / "f5-v0.html").read_text())
    families["late-copy.html"] = 5
    write_index(root, families)
    arrivals2, kept2, _ = crawl(base, store, tmp_path)
    assert {k["url"] for k in kept2} == {k["url"] for k in kept}
    check_against_brute_force(arrivals2, kept2, families)
    with fpstore.open(str(store), read_only=True) as s:
        assert s.stats().documents == len(kept)
