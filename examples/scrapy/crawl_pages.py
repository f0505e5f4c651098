"""A small Scrapy crawl for the pipeline's test (test_pipeline.py): from an
index page, follow every link and yield each page's URL and text, through
NearDuplicatePipeline. Records every item that reaches the pipeline
(ARRIVALS) and every item it keeps (a JSON-lines feed).

    python3 crawl_pages.py START_URL STORE ARRIVALS KEPT
"""

import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess


class Pages(scrapy.Spider):
    name = "pages"

    def __init__(self, start, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        yield from response.follow_all(css="a", callback=self.page)

    def page(self, response):
        words = (t.strip() for t in response.css("body ::text").getall())
        yield {"url": response.url, "text": " ".join(w for w in words if w)}


class Arrivals:
    """Writes each item as it reaches the next pipeline, one JSON line each."""

    def open_spider(self, spider):
        self.out = open(spider.settings["ARRIVALS"], "w")

    def close_spider(self, spider):
        self.out.close()

    def process_item(self, item, spider):
        self.out.write(json.dumps(dict(item)) + "\n")
        return item


def main():
    start, store, arrivals, kept = sys.argv[1:5]
    process = CrawlerProcess(settings={
        "ITEM_PIPELINES": {
            "crawl_pages.Arrivals": 100,
            "fpstore_pipeline.NearDuplicatePipeline": 300,
        },
        "FPSTORE_PATH": store,
        "ARRIVALS": arrivals,
        "FEEDS": {kept: {"format": "jsonlines"}},
        "LOG_LEVEL": "INFO",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    })
    process.crawl(Pages, start=start)
    process.start()


if __name__ == "__main__":
    main()
