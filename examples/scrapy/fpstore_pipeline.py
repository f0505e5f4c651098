"""A Scrapy item pipeline that drops near-duplicate pages, with fpstore.

Enable it in a project's settings:

    ITEM_PIPELINES = {"fpstore_pipeline.NearDuplicatePipeline": 300}
    FPSTORE_PATH = "crawl.fps"          # the store; created on the first crawl
    FPSTORE_TEXT_FIELD = "text"         # the item field with the page's text
    FPSTORE_URL_FIELD = "url"           # the field that names the page
    # Optional: FPSTORE_DISTANCE (0..3), FPSTORE_MIN_SIMILARITY (0..1)

Each item's text is fingerprinted and signed; an item is dropped when the
store already holds a page within the distance whose estimated similarity
passes the threshold, and kept (and stored) otherwise, in one atomic
check-and-insert. The store persists across crawls, so a page seen in an
earlier crawl counts too. A page is stored under a 64-bit hash of its URL:
crawling the same URL again updates it rather than calling it a copy of
itself (a page whose new text copies another page is dropped, and its
earlier text stays stored). The check runs in a thread of Twisted's pool (fpstore releases the
GIL), not in the reactor.
"""

import hashlib

import fpstore
from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem, NotConfigured
from twisted.internet import threads


def url_id(url: str) -> int:
    """A page's id in the store: the first 8 bytes of BLAKE2b of its URL."""
    return int.from_bytes(hashlib.blake2b(url.encode(), digest_size=8).digest(), "big")


class NearDuplicatePipeline:
    def __init__(self, path, text_field="text", url_field="url", distance=None,
                 min_similarity=None):
        self.path = path
        self.text_field = text_field
        self.url_field = url_field
        self.distance = distance
        self.min_similarity = min_similarity
        self.store = None

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        path = settings.get("FPSTORE_PATH")
        if not path:
            raise NotConfigured("set FPSTORE_PATH to the store's directory")
        distance = settings.get("FPSTORE_DISTANCE")
        min_similarity = settings.get("FPSTORE_MIN_SIMILARITY")
        return cls(
            path,
            text_field=settings.get("FPSTORE_TEXT_FIELD", "text"),
            url_field=settings.get("FPSTORE_URL_FIELD", "url"),
            distance=None if distance is None else int(distance),
            min_similarity=None if min_similarity is None else float(min_similarity),
        )

    def open_spider(self, spider):
        self.store = fpstore.open(self.path)

    def close_spider(self, spider):
        if self.store is not None:
            self.store.close()
            self.store = None

    def process_item(self, item, spider):
        return threads.deferToThread(self._check, item)

    def _check(self, item):
        adapter = ItemAdapter(item)
        url = adapter.get(self.url_field)
        text = adapter.get(self.text_field)
        if not isinstance(url, str) or not isinstance(text, str):
            raise DropItem(f"no {self.url_field!r} or {self.text_field!r} string in the item")
        page = url_id(url)
        result = self.store.check_and_insert(
            page, text, url.encode(), if_no_match=True, distance=self.distance,
            min_similarity=self.min_similarity)
        if result.inserted:
            return item
        # The matches never include the page itself: a recrawl of a URL whose text is no copy of
        # another page is inserted, replacing its earlier text, above.
        best = result.matches[0]
        similarity = "-" if best.similarity is None else f"{best.similarity:.3f}"
        raise DropItem(
            f"near-duplicate of {best.metadata.decode(errors='replace')} "
            f"(distance {best.distance}, similarity {similarity})")
