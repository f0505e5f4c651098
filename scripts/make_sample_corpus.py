#!/usr/bin/env python3
"""Build fpstore's sample corpus: licence texts with planted near-duplicates.

The corpus is the licence texts every Debian machine ships under
/usr/share/common-licenses, cut into sections of roughly 100-250 words, plus
edited copies of some sections whose relation to their original is known:

  exact     the same text under another url (a mirror);
  light     case, whitespace, punctuation or Unicode-compatibility changes
            only, so that the store's tokenizer (NFKC_Casefold, then Unicode
            word boundaries) sees exactly the original's tokens: the
            fingerprint is identical and the store MUST pair them;
  moderate  a few words replaced, deleted or inserted (1-3 words, or about
            3-8% of the words); at 80-320 words per document even one changed
            word changes 3 shingles, which typically moves a 64-bit simhash
            by 2-8 bits, so the store MAY or may not pair them;
  heavy     35-50% of the words edited: must not be near-duplicates;
  unrelated the first third of the original followed by most of a section of
            another licence family: must not be near-duplicates.

A few short paragraphs in Chinese, Japanese and Thai, written for this corpus,
exercise the Unicode path; each has one word-edited copy, one unrelated page
and, for Japanese, a copy in half-width katakana (identical after NFKC).

Writes, by default relative to the repository root whatever the cwd:
  data/sample.jsonl       {"id": n, "url": ..., "text": ...} per line;
  data/sample_truth.tsv   copy_id<TAB>original_id<TAB>kind per planted copy.

Everything is deterministic (fixed seed, sorted iteration, no network,
standard library only): the output is byte-for-byte reproducible from the
same licence files. Run: python3 scripts/make_sample_corpus.py
"""

import argparse
import hashlib
import json
import random
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

SEED = 20240607
REPO_ROOT = Path(__file__).resolve().parent.parent
LICENSE_DIR = Path("/usr/share/common-licenses")

# Regular files only: GPL, LGPL and GFDL are symlinks to the latest versions
# and would double those texts.
LICENSES = (
    "Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.2", "GFDL-1.3",
    "GPL-1", "GPL-2", "GPL-3", "LGPL-2", "LGPL-2.1", "LGPL-3", "MPL-1.1",
    "MPL-2.0",
)

# sha256 of the files the committed corpus was made from (Debian 12,
# base-files 12.4+deb12u11). Other versions still work, but give a
# different corpus, so we warn rather than fail.
EXPECTED_SHA256 = {
    "Apache-2.0": "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
    "Artistic": "b7fd9b73ea99602016a326e0b62e6646060d18febdd065ceca8bb482208c3d88",
    "BSD": "5d588eb3b157d52112afea935c88a7ff9efddc1e2d95a42c25d3b96ad9055008",
    "CC0-1.0": "a2010f343487d3f7618affe54f789f5487602331c0a8d03f49e9a7c547cf0499",
    "GFDL-1.2": "d8e94ae5fdb5433fcae2961aeb1a8cf17174d6f4a0465d24bf37dd8a038bd439",
    "GFDL-1.3": "110535522396708cea37c72a802c5e7e81391139f5f7985631c93ef242b206a4",
    "GPL-1": "d77d235e41d54594865151f4751e835c5a82322b0e87ace266567c3391a4b912",
    "GPL-2": "8177f97513213526df2cf6184d8ff986c675afb514d4e68a404010521b880643",
    "GPL-3": "3972dc9744f6499f0f9b2dbf76696f2ae7ad8af9b23dde66d6af86c9dfb36986",
    "LGPL-2": "681e386e44a19d7d0674b4320272c90e66b6610b741e7e6305f8219c42e85366",
    "LGPL-2.1": "dc626520dcd53a22f727af3ee42c770e56c97a64fe3adb063799d8ab032fe551",
    "LGPL-3": "e3a994d82e644b03a792a930f574002658412f62407f5fee083f2555c5f23118",
    "MPL-1.1": "f849fc26a7a99981611a3a370e83078deb617d12a45776d6c4cada4d338be469",
    "MPL-2.0": "fab3dd6bdab226f1c08630b1dd917e11fcb4ec5e1e020e2c16f83a0a13863e85",
}

# Section sizes, in whitespace-separated words. A section closes at the next
# numbered heading once it has TARGET_WORDS, or before a paragraph that would
# take it past MAX_WORDS; a short tail is merged into the section before it.
MIN_WORDS = 80
TARGET_WORDS = 100
MAX_WORDS = 250

# How many originals get copies, and of which kinds. Cluster originals get
# 2-4 copies (at least two of them exact or light, so clusters of three or
# more documents are guaranteed); the others get one copy each.
CLUSTER_ORIGINALS = 18
SINGLE_COPY_KINDS = {"exact": 10, "light": 18, "moderate": 20, "heavy": 8, "unrelated": 8}

# Edits of 1-3 words are the spec's "light" case, but on documents this short
# they are not reliably within 3 bits (see the module docstring), so they are
# labelled moderate: the truth file promises only what the store must do.
SMALL_WORD_EDIT_KIND = "moderate"

MIRROR_HOSTS = (
    "mirror1.example.org", "mirror2.example.org", "mirror3.example.org",
    "ftp.example.com", "www.example.com",
)

HEADING_RE = re.compile(r"^\s*(\d+(?:\.\d+)*)\.?(?:\s|$)")
# An ASCII word with optional punctuation around it: the only pieces that
# word edits touch, so hyphenated words, numbers and urls stay intact.
EDITABLE_RE = re.compile(r"^([^A-Za-z]*)([A-Za-z]+)([^A-Za-z]*)$")
# Rough stand-in for the store's tokenizer (ICU word boundaries after
# NFKC_Casefold), good enough to check that "light" edits keep the tokens.
APPROX_TOKEN_RE = re.compile(r"\w+(?:['\u2019.:]\w+)*")


@dataclass
class Doc:
    url: str
    text: str
    group: int  # index of the original this document belongs with
    kind: str = "original"


# ---------------------------------------------------------------------------
# Originals: licence texts cut into sections.


def read_paragraphs(path):
    """Blank-line separated paragraphs, with layout-only clean-up.

    Form feeds (page breaks in the GNU texts) are dropped, tabs expanded and
    trailing spaces stripped, so the JSON stays readable; words and line
    breaks are kept verbatim.
    """
    text = path.read_text(encoding="utf-8").replace("\f", "")
    paragraphs, current = [], []
    for line in text.splitlines():
        line = line.expandtabs().rstrip()
        if line:
            current.append(line)
        elif current:
            paragraphs.append("\n".join(current))
            current = []
    if current:
        paragraphs.append("\n".join(current))
    return paragraphs


def word_count(text):
    return len(text.split())


def chunk_paragraphs(paragraphs):
    """Group paragraphs into sections of MIN_WORDS..~MAX_WORDS words."""
    chunks, current, words = [], [], 0
    for paragraph in paragraphs:
        n = word_count(paragraph)
        at_heading = HEADING_RE.match(paragraph) is not None
        if current and ((words >= TARGET_WORDS and at_heading)
                        or (words >= MIN_WORDS and words + n > MAX_WORDS)):
            chunks.append(current)
            current, words = [], 0
        current.append(paragraph)
        words += n
    if current:
        if chunks and words < MIN_WORDS:
            chunks[-1].extend(current)
        else:
            chunks.append(current)
    return chunks


def fragment_names(chunks):
    """url fragments: section-7 for a chunk starting at heading 7;
    section-7-part-2 for one continuing the section last seen; preamble,
    preamble-part-2 before the first heading. Made unique if need be."""
    names, used, parts = [], set(), {}
    section = "preamble"
    for chunk in chunks:
        match = HEADING_RE.match(chunk[0])
        if match:
            section = "section-" + match.group(1)
        parts[section] = parts.get(section, 0) + 1
        name = section if parts[section] == 1 else f"{section}-part-{parts[section]}"
        while name in used:  # e.g. numbering restarting in an appendix
            name += "-again"
        used.add(name)
        names.append(name)
        # Headings inside the chunk decide what the next chunk continues.
        for paragraph in chunk[1:]:
            match = HEADING_RE.match(paragraph)
            if match:
                section = "section-" + match.group(1)
                parts[section] = 1
    return names


def check_source(path, name):
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != EXPECTED_SHA256[name]:
        print(f"warning: {path} differs from the version the committed corpus "
              "was made from; the output will differ too", file=sys.stderr)


def load_originals(license_dir):
    """[(licence name, fragment, text)] for every section of every licence."""
    sections = []
    for name in LICENSES:
        path = license_dir / name
        check_source(path, name)
        chunks = chunk_paragraphs(read_paragraphs(path))
        for fragment, chunk in zip(fragment_names(chunks), chunks):
            sections.append((name, fragment, "\n\n".join(chunk)))
    return sections


# ---------------------------------------------------------------------------
# Token-preserving ("light") edits. Each returns the text unchanged when it
# finds nothing to do, so the caller can try another.


def approx_tokens(text):
    return APPROX_TOKEN_RE.findall(unicodedata.normalize("NFKC", text).casefold())


def ascii_upper(text):
    return text.translate({c: c - 32 for c in range(ord("a"), ord("z") + 1)})


def ascii_lower(text):
    return text.translate({c: c + 32 for c in range(ord("A"), ord("Z") + 1)})


def change_case(text, rng):
    """Upper-case one line, or lower-case everything (ASCII only, so case
    folding undoes it exactly)."""
    if rng.random() < 0.5:
        return ascii_lower(text)
    lines = text.split("\n")
    candidates = [i for i, line in enumerate(lines) if ascii_upper(line) != line]
    if not candidates:
        return text
    i = rng.choice(candidates)
    lines[i] = ascii_upper(lines[i])
    return "\n".join(lines)


def change_whitespace(text, rng):
    """Re-wrap every paragraph at another width, or use CRLF line ends.
    Whitespace runs only ever change into other whitespace runs."""
    if rng.random() < 0.25:
        return text.replace("\n", "\r\n")
    width = rng.choice((50, 60, 100, 1000))
    paragraphs = []
    for paragraph in text.split("\n\n"):
        lines, line = [], ""
        for word in paragraph.split():
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def change_punctuation(text, rng):
    """Drop commas, turn commas into semicolons, or use curly quotes.

    Only punctuation followed by whitespace is touched: between two letters
    or digits ("e.g", "1.2", "don't") it is part of a word token.
    """
    op = rng.choice(("drop", "semicolon", "quotes"))
    if op == "quotes" and '"' in text:
        # An opening quote follows a space, a line start or a bracket.
        text = re.sub(r'(^|(?<=[\s(\[]))"', "\u201c", text)
        return text.replace('"', "\u201d")
    spots = [m.start() for m in re.finditer(r"(?<=\w),(?=\s)", text)]
    if not spots:
        return text
    chosen = sorted(rng.sample(spots, min(len(spots), rng.randint(1, 3))), reverse=True)
    replacement = "" if op in ("drop", "quotes") else ";"
    for i in chosen:
        text = text[:i] + replacement + text[i + 1:]
    return text


def to_fullwidth(word):
    return "".join(chr(ord(c) + 0xFEE0) for c in word)


def change_compatibility_forms(text, rng):
    """Characters that NFKC maps back: full-width letters, the fi/fl
    ligatures, no-break spaces. Exercises the normalisation step."""
    op = rng.choice(("fullwidth", "ligature", "nbsp"))
    if op == "ligature" and re.search(r"f[il]", text):
        spots = [m.start() for m in re.finditer(r"(?<=[a-z])f[il]|f[il](?=[a-z])", text)]
        chosen = sorted(rng.sample(spots, min(len(spots), 3)), reverse=True)
        for i in chosen:
            text = text[:i] + ("\ufb01" if text[i + 1] == "i" else "\ufb02") + text[i + 2:]
        return text
    if op == "nbsp":
        spots = [m.start() for m in re.finditer(r"(?<=\S) (?=\S)", text)]
        for i in sorted(rng.sample(spots, min(len(spots), 4)), reverse=True):
            text = text[:i] + "\u00a0" + text[i + 1:]
        return text
    words = [m for m in re.finditer(r"\b[A-Za-z]{4,}\b", text)]
    for m in sorted(rng.sample(words, min(len(words), 2)), key=lambda m: -m.start()):
        text = text[:m.start()] + to_fullwidth(m.group()) + text[m.end():]
    return text


LIGHT_EDITS = (change_case, change_whitespace, change_punctuation, change_compatibility_forms)


def light_edit(text, rng):
    """One or two token-preserving edits; the result always differs."""
    edits = list(LIGHT_EDITS)
    rng.shuffle(edits)
    wanted = rng.choice((1, 1, 2))
    result, applied = text, 0
    for edit in edits:
        edited = edit(result, rng)
        if edited != result:
            result, applied = edited, applied + 1
            if applied == wanted:
                break
    assert result != text, "no light edit applied"
    assert approx_tokens(result) == approx_tokens(text), "light edit changed tokens"
    return result


# ---------------------------------------------------------------------------
# Word edits (moderate and heavy).


def split_words(text):
    """Leading whitespace and [word, following whitespace] pairs, so that
    edited text keeps the original's layout."""
    lead = re.match(r"\s*", text).group()
    return lead, [list(p) for p in re.findall(r"(\S+)(\s*)", text)]


def vocabulary(pairs):
    words = {EDITABLE_RE.match(w).group(2).lower() for w, _ in pairs if EDITABLE_RE.match(w)}
    return sorted(w for w in words if len(w) >= 3)  # sorted: sets are unordered


def edit_words(text, n_edits, rng):
    """Replace, delete or insert n_edits words at distinct positions, using
    words of the same text so the result still reads like a licence."""
    lead, pairs = split_words(text)
    vocab = vocabulary(pairs)
    editable = [i for i, (w, _) in enumerate(pairs) if EDITABLE_RE.match(w)]
    positions = sorted(rng.sample(editable, min(n_edits, len(editable))), reverse=True)
    for i in positions:  # from the end, so earlier indexes stay valid
        op = rng.choice(("replace", "replace", "delete", "insert"))
        before, core, after = EDITABLE_RE.match(pairs[i][0]).groups()
        new = rng.choice([w for w in vocab if w != core.lower()])
        if core[0].isupper():
            new = new.capitalize()
        if op == "replace":
            pairs[i][0] = before + new + after
        elif op == "insert":
            pairs.insert(i, [new, " "])
        elif len(pairs) > 1:
            # Keep a line break that followed the deleted word.
            if i > 0 and "\n" in pairs[i][1]:
                pairs[i - 1][1] = pairs[i][1]
            del pairs[i]
    return lead + "".join(w + s for w, s in pairs)


def moderate_edit(text, rng):
    """(kind, text): 1-3 words, or 3-8% of the words, edited."""
    if rng.random() < 0.5:
        return SMALL_WORD_EDIT_KIND, edit_words(text, rng.randint(1, 3), rng)
    n = max(2, round(word_count(text) * rng.uniform(0.03, 0.08)))
    return "moderate", edit_words(text, n, rng)


def heavy_edit(text, rng):
    return edit_words(text, round(word_count(text) * rng.uniform(0.35, 0.5)), rng)


def family(name):
    """Licences sharing whole passages (GPL/LGPL, the two GFDLs) count as one
    family, so an unrelated mix never takes its second part from a twin."""
    return name.split("-")[0].removeprefix("L")


def unrelated_mix(text, other, rng):
    """The first ~third of text, then the rest of another licence's section."""
    lead, pairs = split_words(text)
    head = round(len(pairs) * rng.uniform(0.25, 0.4))
    _, other_pairs = split_words(other)
    tail = other_pairs[round(len(other_pairs) * 0.35):]
    head_text = lead + "".join(w + s for w, s in pairs[:head])
    return head_text.rstrip() + "\n\n" + "".join(w + s for w, s in tail)


# ---------------------------------------------------------------------------
# Planting copies.


def mirror_url(host, name, fragment):
    return f"https://{host}/licenses/{name}/{fragment}"


def plan_kinds(n_originals, rng):
    """{original index: [kind, ...]} for the originals that get copies."""
    chosen = rng.sample(range(n_originals), CLUSTER_ORIGINALS + sum(SINGLE_COPY_KINDS.values()))
    plan = {}
    for i in chosen[:CLUSTER_ORIGINALS]:
        kinds = [rng.choice(("exact", "light")) for _ in range(2)]
        kinds += [rng.choice(("exact", "light", "moderate", "heavy"))
                  for _ in range(rng.randint(0, 2))]
        plan[i] = kinds
    singles = [k for k, n in SINGLE_COPY_KINDS.items() for _ in range(n)]
    rng.shuffle(singles)
    for i, kind in zip(chosen[CLUSTER_ORIGINALS:], singles):
        plan[i] = [kind]
    return plan


def make_copy(kind, text, name, sections, rng):
    """(actual kind, edited text) for one planted copy."""
    if kind == "exact":
        return kind, text
    if kind == "light":
        return kind, light_edit(text, rng)
    if kind == "moderate":
        return moderate_edit(text, rng)
    if kind == "heavy":
        return kind, heavy_edit(text, rng)
    others = [s for s in sections if family(s[0]) != family(name)]
    return kind, unrelated_mix(text, rng.choice(others)[2], rng)


def english_documents(license_dir, rng):
    sections = load_originals(license_dir)
    docs = [Doc(f"file://{license_dir}/{name}#{fragment}", text, i)
            for i, (name, fragment, text) in enumerate(sections)]
    plan = plan_kinds(len(sections), rng)
    for i in sorted(plan):
        name, fragment, text = sections[i]
        hosts = rng.sample(MIRROR_HOSTS, len(plan[i]))
        for host, kind in zip(hosts, plan[i]):
            kind, copy = make_copy(kind, text, name, sections, rng)
            docs.append(Doc(mirror_url(host, name, fragment), copy, i, kind))
    return docs


# ---------------------------------------------------------------------------
# Non-English documents, written for this corpus.

ZH_LICENCES = (
    "开源许可证规定了别人可以怎样使用、修改和分发一个软件。宽松型许可证，例如 MIT "
    "许可证和 BSD 许可证，通常只要求保留原来的版权声明；而 GPL 这样的 copyleft "
    "许可证则要求，如果发布修改后的版本，就必须以同样的许可证公开源代码。把第三方代码"
    "加入自己的项目之前，最好先确认两份许可证是否兼容，否则以后可能不得不删除或重写"
    "相关的部分。"
)
ZH_CRAWLING = (
    "网络爬虫在抓取一个网站之前，应当先读取该网站的 robots.txt 文件，并遵守其中的规则。"
    "为了不给服务器带来过大的压力，爬虫通常会限制对同一主机的请求频率。互联网上有许多"
    "网页的内容几乎完全相同，只有广告或日期不一样，因此搜索引擎会为每个网页计算一个简短"
    "的指纹，用来发现这些近似重复的页面，从而节省存储空间和带宽。"
)
JA_NEAR_DUPLICATES = (
    "ウェブクローラーは毎日大量のページを集めますが、その中には内容がほとんど同じページが"
    "数多く含まれています。たとえば、印刷用のページや、日付や広告だけが異なるミラーサイトの"
    "ページなどです。こうした重複を見つけるために、文書ごとに短い指紋を計算し、指紋の異なる"
    "ビットが少ない文書同士を近似重複とみなします。この方法を使えば、すべての文書を一つずつ"
    "比べる必要はありません。"
)
JA_LICENCES = (
    "ソフトウェアを公開するときは、利用者が何をしてよいのかがはっきり分かるように、必ず"
    "ライセンスを添付しましょう。ライセンスが書かれていないコードは、誰でも読める場所に"
    "置かれていても、自由に再利用してよいとは限りません。いくつかのライブラリを組み合わせる"
    "場合は、それぞれのライセンスの条件が互いに矛盾しないかを事前に確認しておくことが大切です。"
)
TH_LICENCES = (
    "ใบอนุญาตซอฟต์แวร์โอเพนซอร์สกำหนดว่าผู้อื่นสามารถใช้ แก้ไข และเผยแพร่โปรแกรมได้อย่างไร "
    "ใบอนุญาตบางแบบอนุญาตให้นำโค้ดไปใช้ในผลิตภัณฑ์เชิงพาณิชย์ได้อย่างอิสระ "
    "ขณะที่บางแบบกำหนดว่าผู้ที่เผยแพร่งานดัดแปลงต้องเปิดเผยซอร์สโค้ดด้วย "
    "ก่อนนำโค้ดของผู้อื่นมาใช้ในโครงการของเรา ควรอ่านเงื่อนไขของใบอนุญาตให้ละเอียดเสมอ"
)
TH_CRAWLING = (
    "โปรแกรมรวบรวมข้อมูลเว็บจะเปิดอ่านหน้าเว็บทีละหน้า แล้วติดตามลิงก์ไปยังหน้าอื่นต่อไปเรื่อย ๆ "
    "เพื่อไม่ให้เซิร์ฟเวอร์ของผู้อื่นทำงานหนักเกินไป โปรแกรมที่ดีควรเว้นระยะเวลาระหว่างการดาวน์โหลด"
    "แต่ละครั้ง และควรปฏิบัติตามกฎที่เจ้าของเว็บไซต์เขียนไว้ในไฟล์ robots.txt"
)


def replace_words(text, *replacements):
    """Swap whole words, each of which must occur exactly once."""
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def to_halfwidth_katakana(text):
    """Full-width katakana as half-width forms, which NFKC maps back
    (voiced kana become a base kana plus a separate sound mark)."""
    table = {}
    for code in range(0xFF66, 0xFF9E):
        half = chr(code)
        table[unicodedata.normalize("NFKC", half)] = half
        for mark in ("\uff9e", "\uff9f"):
            composed = unicodedata.normalize("NFKC", half + mark)
            if len(composed) == 1:
                table[composed] = half + mark
    result = "".join(table.get(c, c) for c in text)
    assert unicodedata.normalize("NFKC", result) == text
    return result


def unicode_documents(first_group):
    """Originals and copies in Chinese, Japanese and Thai."""
    g = first_group
    return [
        Doc("https://www.example.com/zh/notes/open-source-licences", ZH_LICENCES, g),
        Doc("https://mirror1.example.org/zh/notes/open-source-licences",
            replace_words(ZH_LICENCES, ("别人", "他人"), ("最好", "一定要")), g, "moderate"),
        Doc("https://www.example.com/zh/notes/web-crawling", ZH_CRAWLING, g, "unrelated"),
        Doc("https://www.example.com/ja/blog/near-duplicates", JA_NEAR_DUPLICATES, g + 1),
        Doc("https://mirror2.example.org/ja/blog/near-duplicates",
            to_halfwidth_katakana(JA_NEAR_DUPLICATES), g + 1, "light"),
        Doc("https://mirror3.example.org/ja/blog/near-duplicates",
            replace_words(JA_NEAR_DUPLICATES, ("毎日", "毎週"), ("ほとんど", "ほぼ")),
            g + 1, "moderate"),
        Doc("https://www.example.com/ja/blog/licences", JA_LICENCES, g + 1, "unrelated"),
        Doc("https://www.example.com/th/articles/open-source-licences", TH_LICENCES, g + 2),
        Doc("https://mirror1.example.org/th/articles/open-source-licences",
            replace_words(TH_LICENCES, ("อย่างอิสระ", "อย่างเสรี"), ("ละเอียด", "ถี่ถ้วน")),
            g + 2, "moderate"),
        Doc("https://www.example.com/th/articles/web-crawling", TH_CRAWLING, g + 2, "unrelated"),
    ]


# ---------------------------------------------------------------------------
# Ordering and output.


def shuffle_apart(docs, rng):
    """Shuffle until no document sits next to another of its group, so a
    store or test cannot get the clusters right by looking at neighbours."""
    for _ in range(10000):
        rng.shuffle(docs)
        if all(a.group != b.group or (a.kind == b.kind == "original")
               for a, b in zip(docs, docs[1:])):
            return docs
    raise RuntimeError("could not separate copies from their originals")


def build(license_dir):
    rng = random.Random(SEED)
    docs = english_documents(license_dir, rng)
    docs += unicode_documents(max(d.group for d in docs) + 1)
    docs = shuffle_apart(docs, rng)
    urls = [d.url for d in docs]
    assert len(set(urls)) == len(urls), "duplicate url"
    return docs


def truth_rows(docs):
    """(copy id, original id, kind) for every planted copy, by copy id."""
    original_id = {d.group: i for i, d in enumerate(docs, 1) if d.kind == "original"}
    return [(i, original_id[d.group], d.kind)
            for i, d in enumerate(docs, 1) if d.kind != "original"]


def write_outputs(docs, corpus_path, truth_path):
    corpus_path.parent.mkdir(parents=True, exist_ok=True)
    with open(corpus_path, "w", encoding="utf-8", newline="\n") as out:
        for i, doc in enumerate(docs, 1):
            record = {"id": i, "url": doc.url, "text": doc.text}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(truth_path, "w", encoding="utf-8", newline="\n") as out:
        for row in truth_rows(docs):
            out.write("\t".join(map(str, row)) + "\n")


def summary(docs, corpus_path):
    counts = {}
    for doc in docs:
        counts[doc.kind] = counts.get(doc.kind, 0) + 1
    parts = ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))
    return (f"{corpus_path}: {len(docs)} documents ({parts}), "
            f"{corpus_path.stat().st_size} bytes")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--licenses", type=Path, default=LICENSE_DIR,
                        help="directory of licence texts (default: %(default)s)")
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "data" / "sample.jsonl",
                        help="corpus to write (default: data/sample.jsonl)")
    parser.add_argument("--truth", type=Path, default=REPO_ROOT / "data" / "sample_truth.tsv",
                        help="planted pairs to write (default: data/sample_truth.tsv)")
    args = parser.parse_args(argv)
    docs = build(args.licenses)
    write_outputs(docs, args.output, args.truth)
    print(summary(docs, args.output))


if __name__ == "__main__":
    main()
