#!/usr/bin/python3
"""Builds the labelled corpus of fpstore-quality (docs/quality.md).

Reads documentation that Debian packages install, turns each page into text,
and writes one JSON object per line: {"id", "text", "url", "source"}, ids
from 1. It then appends seeded edited copies of a sample of the pages (word
substitutions, sentence insertions and deletions, paragraph swaps) at a range
of edit rates, so that pairs fall on both sides of a Jaccard similarity of
0.9. Their "url" is "edit-of:ID:KIND" and their "source" is "edit".

Standard library only; runs with Debian's /usr/bin/python3. The same
packages, seed and options give the same file.
"""

import argparse
import gzip
import hashlib
import html.parser
import json
import os
import random
import re
import sys

APT_LINE = ("apt-get install -y libboost1.74-doc python3.11-doc postgresql-doc-15 "
            "debian-reference-en debian-handbook perl-doc")
# libboost1.81-doc conflicts with libboost1.74-doc, so it is unpacked, not installed.
UNPACK_LINES = ("apt-get download libboost1.81-doc && "
                "dpkg-deb -x libboost1.81-doc_*.deb {unpacked}")
DEFAULT_UNPACKED = "/var/tmp/fpstore-quality"

# (source name, package, directory read, kind, a path the package installs).
# The Rust toolchain's documentation (rust-doc and the like) is never read:
# it is kept for an independent check.
SOURCES = [
    ("boost-1.74", "libboost1.74-doc", "/usr/share/doc/libboost1.74-doc", "boost", None),
    ("boost-1.81", "libboost1.81-doc (unpacked)", "{unpacked}/usr/share/doc/libboost1.81-doc",
     "boost", None),
    ("python-3.11", "python3.11-doc", "/usr/share/doc/python3.11/html", "html", None),
    ("postgresql-15", "postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html", "html", None),
    ("debian-reference", "debian-reference-en", "/usr/share/debian-reference", "html-en", None),
    ("debian-handbook", "debian-handbook", "/usr/share/doc/debian-handbook/html", "handbook",
     None),
    ("perl-doc", "perl-doc", "/usr/share/perl/5.36/pod", "pod",
     "/usr/share/perl/5.36/pod/perlfunc.pod"),
    # Present on every Debian system: the mailing-list-like part.
    ("changelog", "(any installed package)", "/usr/share/doc", "changelog", None),
    ("copyright", "(any installed package)", "/usr/share/doc", "copyright", None),
]

MIN_WORDS = 20
WORD = re.compile(r"[^\W_]+")  # runs of Unicode letters and digits, as fpstore-quality's words

BLOCK_TAGS = {
    "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol", "dl", "dt", "dd",
    "pre", "table", "tr", "section", "article", "header", "footer", "nav", "blockquote",
    "hr", "form", "address", "figure", "figcaption", "caption", "tbody", "thead",
}
HIDDEN_TAGS = {"script", "style", "head", "template"}


class TextExtractor(html.parser.HTMLParser):
    """The visible text of a page, navigation included, one paragraph per block."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        if tag in HIDDEN_TAGS:
            self.hidden += 1
        elif tag in BLOCK_TAGS:
            self.parts.append("\n\n")
        elif tag in ("br", "td", "th"):
            self.parts.append("\n" if tag == "br" else " ")

    def handle_endtag(self, tag):
        if tag in HIDDEN_TAGS:
            self.hidden = max(0, self.hidden - 1)
        elif tag in BLOCK_TAGS:
            self.parts.append("\n\n")

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def normalise_paragraphs(text):
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        block = " ".join(block.split())
        if block:
            paragraphs.append(block)
    return "\n\n".join(paragraphs)


def decode(data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def html_to_text(data):
    parser = TextExtractor()
    parser.feed(decode(data))
    parser.close()
    return normalise_paragraphs("".join(parser.parts))


def pod_to_text(text):
    text = re.sub(r"E<(lt|gt|sol|verbar)>",
                  lambda m: {"lt": "<", "gt": ">", "sol": "/", "verbar": "|"}[m.group(1)], text)
    text = re.sub(r"[BICLFSXZE]<+\s?", "", text)
    lines = []
    for line in text.splitlines():
        if line.startswith("="):
            command, _, rest = line.partition(" ")
            if command in ("=head1", "=head2", "=head3", "=head4", "=item"):
                lines.extend(["", rest, ""])
            continue
        lines.append(line)
    return normalise_paragraphs("\n".join(lines))


def word_count(text):
    return len(WORD.findall(text))


def stable_key(seed, text):
    return hashlib.sha1(f"{seed}:{text}".encode()).hexdigest()


def files_under(root, suffix=(".html", ".htm")):
    found = []
    for directory, _, files in os.walk(root):
        for name in files:
            if name.endswith(suffix):
                found.append(os.path.join(directory, name))
    return sorted(found)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def read_html_pages(source, paths):
    for path in paths:
        yield source, path, html_to_text(read_bytes(path))


def read_boost(args, roots):
    """The same sampled relative paths from both Boost versions."""
    relative = set()
    for root in roots.values():
        relative.update(os.path.relpath(p, root) for p in files_under(root))
    chosen = sorted(relative, key=lambda r: stable_key(args.seed, r))
    chosen = sorted(chosen[:args.boost_pages] if args.boost_pages > 0 else chosen)
    for source, root in roots.items():
        paths = [os.path.join(root, r) for r in chosen if os.path.isfile(os.path.join(root, r))]
        yield from read_html_pages(source, paths)


def changelog_entries(text):
    """Entries of a Debian changelog: header line through the ' -- ' trailer."""
    entry = []
    for line in text.splitlines():
        if line and not line[0].isspace() and not entry:
            entry = [line]
        elif entry:
            entry.append(line)
            if line.startswith(" -- "):
                yield "\n".join(entry)
                entry = []


def unique_doc_files(names):
    """/usr/share/doc/*/NAME files, one per distinct content, in path order."""
    seen = set()
    for package in sorted(os.listdir("/usr/share/doc")):
        for name in names:
            path = os.path.join("/usr/share/doc", package, name)
            if not os.path.isfile(path):
                continue
            with open(path, "rb") as f:
                data = f.read()
            if name.endswith(".gz"):
                data = gzip.decompress(data)
            digest = hashlib.sha1(data).digest()
            if digest not in seen:
                seen.add(digest)
                yield path, decode(data)


def read_changelogs(args):
    # Binary packages of one source repeat its entries in files that differ
    # elsewhere: each distinct entry is read once, at its first path.
    entries, seen = [], set()
    for path, text in unique_doc_files(["changelog.Debian.gz", "NEWS.Debian.gz"]):
        for n, entry in enumerate(changelog_entries(text), 1):
            entry = normalise_paragraphs(entry)
            if entry not in seen:
                seen.add(entry)
                entries.append((f"{path}#entry-{n}", entry))
    entries.sort(key=lambda e: stable_key(args.seed, e[0]))
    for url, text in sorted(entries[:args.changelog_entries]):
        yield "changelog", url, text


def read_source(args, kind, source, root):
    if kind == "html":
        return read_html_pages(source, files_under(root))
    if kind == "handbook":
        languages = set(args.handbook_languages.split(",")) if args.handbook_languages else None
        paths = [p for p in files_under(root)
                 if languages is None or os.path.relpath(p, root).split(os.sep)[0] in languages]
        return read_html_pages(source, paths)
    if kind == "html-en":
        return read_html_pages(source, files_under(root, (".en.html",)))
    if kind == "pod":
        return ((source, p, pod_to_text(decode(read_bytes(p))))
                for p in files_under(root, (".pod",)))
    if kind == "changelog":
        return read_changelogs(args)
    return (("copyright", p, normalise_paragraphs(t)) for p, t in unique_doc_files(["copyright"]))


def sources(args):
    return [(name, package, directory.format(unpacked=args.unpacked), kind, marker)
            for name, package, directory, kind, marker in SOURCES]


def check_sources(args):
    missing = [(pkg, marker or d) for _, pkg, d, _, marker in sources(args)
               if not os.path.exists(marker or d)]
    for package, path in missing:
        print(f"make_corpus.py: {path} not found: it comes from the package {package}",
              file=sys.stderr)
    if missing:
        print(f"make_corpus.py: as root: {APT_LINE}\n"
              f"make_corpus.py: and: {UNPACK_LINES.format(unpacked=args.unpacked)}",
              file=sys.stderr)
        sys.exit(1)


def read_documents(args):
    check_sources(args)
    boost = {s: d for s, _, d, kind, _ in sources(args) if kind == "boost"}
    yield from read_boost(args, boost)
    for source, _, root, kind, _ in sources(args):
        if kind != "boost":
            yield from read_source(args, kind, source, root)


# ---- Edited copies ----

SUBSTITUTE_RATES = [0.002, 0.005, 0.01, 0.02, 0.04, 0.08]
SENTENCE_RATES = [0.01, 0.02, 0.05, 0.1]


def substitute(rng, text, rate, vocabulary):
    words = list(WORD.finditer(text))
    count = max(1, round(rate * len(words)))
    chosen = set(rng.sample(range(len(words)), min(count, len(words))))
    out, last = [], 0
    for i, m in enumerate(words):
        if i in chosen:
            out.append(text[last:m.start()])
            out.append(rng.choice(vocabulary))
            last = m.end()
    out.append(text[last:])
    return "".join(out)


def sentences_of(text):
    return [re.split(r"(?<=[.!?])\s+", p) for p in text.split("\n\n")]


def join_sentences(paragraphs):
    return "\n\n".join(" ".join(s) for s in paragraphs if s)


def insert_sentences(rng, text, rate, donors):
    paragraphs = sentences_of(text)
    wanted, added = rate * word_count(text), 0
    while added < max(1, wanted):
        sentence = rng.choice(rng.choice(donors))
        p = rng.choice(paragraphs)
        p.insert(rng.randrange(len(p) + 1), sentence)
        added += max(1, word_count(sentence))
    return join_sentences(paragraphs)


def delete_sentences(rng, text, rate):
    paragraphs = sentences_of(text)
    slots = [(i, j) for i, p in enumerate(paragraphs) for j in range(len(p))]
    if len(slots) < 2:
        return None
    rng.shuffle(slots)
    wanted, removed, doomed = rate * word_count(text), 0, set()
    for slot in slots[:-1]:
        if removed >= max(1, wanted):
            break
        doomed.add(slot)
        removed += max(1, word_count(paragraphs[slot[0]][slot[1]]))
    kept = [[s for j, s in enumerate(p) if (i, j) not in doomed] for i, p in enumerate(paragraphs)]
    return join_sentences(kept)


def swap_paragraphs(rng, text, swaps):
    paragraphs = text.split("\n\n")
    if len(paragraphs) < 2:
        return None
    for _ in range(swaps):
        i, j = rng.sample(range(len(paragraphs)), 2)
        paragraphs[i], paragraphs[j] = paragraphs[j], paragraphs[i]
    return "\n\n".join(paragraphs)


def edit(rng, text, donors, vocabulary):
    """One edited copy of text and the name of its edit, or None."""
    kind = rng.choice(["substitute", "substitute", "insert", "delete", "swap"])
    if kind == "substitute":
        rate = rng.choice(SUBSTITUTE_RATES)
        return substitute(rng, text, rate, vocabulary), f"substitute-{rate}"
    if kind == "insert":
        rate = rng.choice(SENTENCE_RATES)
        return insert_sentences(rng, text, rate, donors), f"insert-{rate}"
    if kind == "delete":
        rate = rng.choice(SENTENCE_RATES)
        return delete_sentences(rng, text, rate), f"delete-{rate}"
    swaps = rng.choice([1, 2, 4])
    return swap_paragraphs(rng, text, swaps), f"swap-{swaps}"


def edited_copies(args, documents):
    rng = random.Random(args.seed)
    sample = rng.sample(documents, min(args.edits, len(documents)))
    donors = [p for d in rng.sample(documents, min(500, len(documents)))
              for p in sentences_of(d["text"])]
    vocabulary = sorted({w.lower() for d in rng.sample(documents, min(200, len(documents)))
                         for w in WORD.findall(d["text"])})
    for original in sample:
        text, kind = edit(rng, original["text"], donors, vocabulary)
        if text is not None and word_count(text) >= MIN_WORDS:
            yield {"text": text, "url": f"edit-of:{original['id']}:{kind}", "source": "edit"}


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"Packages it reads (as root):\n  {APT_LINE}\n"
        f"  {UNPACK_LINES.format(unpacked=DEFAULT_UNPACKED)}\n\n"
        "Example:\n  bench/quality/make_corpus.py --output /tmp/quality.jsonl")
    parser.add_argument("--output", required=True, help="the JSONL file to write")
    parser.add_argument("--seed", type=int, default=1, help="sampling and edits (default 1)")
    parser.add_argument("--unpacked", default=DEFAULT_UNPACKED,
                        help=f"where libboost1.81-doc is unpacked (default {DEFAULT_UNPACKED})")
    parser.add_argument("--boost-pages", type=int, default=0,
                        help="relative paths sampled from the Boost docs, read from both "
                        "versions (default 0: all)")
    parser.add_argument("--handbook-languages", default="",
                        help="the Debian Handbook's languages to read, e.g. en-US,de-DE "
                        "(default: all it ships)")
    parser.add_argument("--changelog-entries", type=int, default=6000,
                        help="changelog and NEWS entries sampled (default 6000)")
    parser.add_argument("--edits", type=int, default=4000,
                        help="edited copies of sampled documents (default 4000)")
    args = parser.parse_args()

    documents, by_source, short = [], {}, 0
    for source, url, text in read_documents(args):
        if word_count(text) < MIN_WORDS:
            short += 1
            continue
        documents.append({"id": len(documents) + 1, "text": text, "url": url, "source": source})
        by_source[source] = by_source.get(source, 0) + 1
    for copy in edited_copies(args, documents):
        copy["id"] = len(documents) + 1
        documents.append(copy)
        by_source["edit"] = by_source.get("edit", 0) + 1

    with open(args.output, "w", encoding="utf-8") as out:
        for d in documents:
            out.write(json.dumps(d, ensure_ascii=False) + "\n")
    for source, count in by_source.items():
        print(f"{source}\t{count}", file=sys.stderr)
    print(f"total\t{len(documents)}\t(skipped {short} with fewer than {MIN_WORDS} words)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
