"""How the mirror lists and reads a store: `open_reader(url)`.

- `FsspecReader`, for any fsspec URL: `find` and `cat_ranges` (batches of concurrent requests).
- `S3Reader`, for `s3://`: the mirror's hot path at 10,000 runs, where s3fs spends its CPU in
  botocore's request pipeline (~1.6 ms a range read) and XML parsing (~0.18 ms an object listed).
  Here botocore only presigns each request (SigV4: credentials, region and addressing as botocore
  resolves them), aiohttp sends it, and C ElementTree parses listings: ~0.5 ms a read and ~0.01 ms
  an object listed (tools/bench_serving.py). The parts of the key space that the last listing
  cut are listed at once (LISTERS). A listing page that fails is asked again (PAGE_TRIES in
  all). A store that refuses a presigned listing (4xx) is read through fsspec for that pass
  (said once): the next pass tries presigned requests again.

Both give keys as `<bucket>/<key>` below `root`, and never wait on a request longer than
REQUEST_SECS (fsspec's calls through mxboard's `call_with_timeout`: gcsfs and adlfs have no bound of their
own on a store that never answers).
"""
import asyncio
import concurrent.futures
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from typing import Any, Dict, List, Optional, Protocol, Sequence, Tuple, Union

from mxboard.storage import S3_REQUESTS, call_with_timeout, open_filesystem
from mxboard.storage.remote.profiles import profile_of

__all__ = ["open_reader", "Reader", "FsspecReader", "S3Reader"]

log = logging.getLogger("tensorboard_bundle")

# One request takes this long at most, as a whole.
REQUEST_SECS = 30
# The range reads in flight at once.
CONCURRENT = 32
# Presigned requests are sent at once: any validity will do.
EXPIRES_SECS = 600
# A listing page is asked this often at most, a second apart.
PAGE_TRIES = 3
# The keys of a listing's page (S3's most), and the pages asked at once: each part of the key space
# that the last listing cut is listed on its own thread (S3 lists one page after another: 10,000
# objects took 0.8 s from SeaweedFS one page at a time).
PAGE_KEYS = 1000
LISTERS = 8
# botocore's name of the S3 API: a service's name, not a URL scheme (profiles.py has those).
BOTOCORE_SERVICE = "s3"


# A listing is {key: {"type", "size", and a tag: "ETag" or a time}}.
Listing = Dict[str, Dict[str, Any]]


class Reader(Protocol):
    root: str

    def listing(self) -> Listing:
        """Every object below root."""

    def read_ranges(self, keys: Sequence[str], starts: Sequence[int],
                    ends: Sequence[int]) -> List[Union[bytes, BaseException]]:
        """The bytes [start, end) of each key, or the exception that read raised, in order."""


def open_reader(url: str) -> Reader:
    """The reader of a store URL: S3Reader where its profile lists with presigned requests (s3://),
    else FsspecReader."""
    if profile_of(url).presigned_listing:
        try:
            return S3Reader(url)
        except ImportError:
            # Without botocore or aiohttp: fsspec's way (which will say what is missing).
            pass
    return FsspecReader(url)


class FsspecReader:
    def __init__(self, url: str) -> None:
        self.fs, self.root = open_filesystem(url)
        # The objects the last listing found.
        self._known = 0

    def listing(self) -> Listing:
        """Bounded (a listing of many pages: REQUEST_SECS a thousand objects known): a hung store
        is an outage of this pass, never a pass that waits for ever."""
        self.fs.invalidate_cache()
        seconds = REQUEST_SECS * (1 + self._known // 1000)
        found: Listing = call_with_timeout(seconds, self.fs.find, self.root, detail=True)
        self._known = len(found)
        return found

    def read_ranges(self, keys: Sequence[str], starts: Sequence[int],
                    ends: Sequence[int]) -> List[Union[bytes, BaseException]]:
        """Bounded: REQUEST_SECS for each CONCURRENT reads, and the time their bytes take at 1 MiB/s."""
        seconds = REQUEST_SECS * (1 + len(keys) // CONCURRENT) + sum(e - s for s, e in zip(starts, ends)) / (1 << 20)
        read: List[Union[bytes, BaseException]] = call_with_timeout(seconds, self.fs.cat_ranges, list(keys),
                                                                    list(starts), list(ends), on_error="return")
        return read


class S3Reader:
    def __init__(self, url: str) -> None:
        # s3fs's dependency: checked here, used in read_ranges.
        import aiohttp  # noqa: F401
        import botocore.session
        from botocore.config import Config

        self.url = url
        self.bucket, _, prefix = url.split("://", 1)[1].partition("/")
        self._prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.root = (self.bucket + "/" + self._prefix).rstrip("/")
        self._client = botocore.session.get_session().create_client(BOTOCORE_SERVICE, config=Config(
            signature_version="s3v4", **S3_REQUESTS))
        # fsspec's reader, made at the first refusal.
        self._fallback: Optional[FsspecReader] = None
        # This pass's listing was refused: this pass reads through fsspec.
        self._refused = False
        # It maps a page ((the key it starts after, its number from there)) -> (its bytes, entries,
        # next token, its last key).
        self._pages: Dict[Tuple[str, int], Tuple[bytes, Listing, Optional[str], str]] = {}
        # The keys that cut the key space into parts listed at once (kept while the parts stay
        # about a page each, so that a page unchanged is not parsed again).
        self._cuts: List[str] = []
        # The CPU seconds the listing's other threads spent (Mirror paces its passes by them).
        self.cpu_elsewhere = 0.0

    def _presign(self, operation: str, **params: Any) -> str:
        url: str = self._client.generate_presigned_url(operation, Params=dict(params, Bucket=self.bucket),
                                                        ExpiresIn=EXPIRES_SECS)
        return url

    def listing(self) -> Listing:
        """Every object: the parts of the key space that the last listing cut, listed at once."""
        self._refused = False
        parts = list(zip([""] + self._cuts, self._cuts + [None]))
        spent: List[float] = []

        def on_a_thread(part: Tuple[str, Optional[str]]) -> Tuple[Listing, List[Tuple[str, int]]]:
            cpu = time.thread_time()
            try:
                return self._part(*part)
            finally:
                spent.append(time.thread_time() - cpu)

        try:
            if len(parts) == 1:
                listed = [self._part(*parts[0])]
            else:
                with concurrent.futures.ThreadPoolExecutor(min(LISTERS, len(parts)),
                                                           thread_name_prefix="mirror lister") as pool:
                    listed = list(pool.map(on_a_thread, parts))
        except urllib.error.HTTPError as exc:
            if 400 <= exc.code < 500 and exc.code != 404:
                return self._fall_back(exc)
            raise
        finally:
            self.cpu_elsewhere += sum(spent)
        found: Listing = {}
        for entries, _ in listed:
            found.update(entries)
        # Only the pages of this listing are kept.
        self._pages = {page: self._pages[page] for _, used in listed for page in used}
        if any(len(used) > 2 for _, used in listed) or \
                any(len(entries) < PAGE_KEYS // 4 for entries, _ in listed[:-1]):
            # Parts that grew or shrank: cut anew, a page each.
            keys = sorted(key.split("/", 1)[1] for key in found)
            self._cuts = keys[PAGE_KEYS - 1:-1:PAGE_KEYS]
        return found

    def _part(self, after: str, until: Optional[str]) -> Tuple[Listing, List[Tuple[str, int]]]:
        """(the objects whose keys come after `after` ("": from the first) up to `until` (None:
        to the last), the pages read for them)."""
        found: Listing = {}
        used: List[Tuple[str, int]] = []
        token: Optional[str] = None
        while True:
            params: Dict[str, Any] = {"Prefix": self._prefix, "MaxKeys": PAGE_KEYS}
            if token:
                params["ContinuationToken"] = token
            elif after:
                params["StartAfter"] = after
            raw = self._page(params)
            page = (after, len(used))
            # A page as last time is not parsed again.
            if page not in self._pages or self._pages[page][0] != raw:
                self._pages[page] = (raw,) + self._parse(raw)
            used.append(page)
            _, entries, token, last = self._pages[page]
            if until is not None and last >= until:
                # The next part's keys (it lists them).
                entries = {key: info for key, info in entries.items() if key.split("/", 1)[1] <= until}
                token = None
            found.update(entries)
            if not token:
                return found, used

    def _page(self, params: Dict[str, Any]) -> bytes:
        for attempt in range(PAGE_TRIES):
            try:
                with urllib.request.urlopen(self._presign("list_objects_v2", **params), timeout=REQUEST_SECS) as r:
                    raw: bytes = r.read()
                    return raw
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or attempt == PAGE_TRIES - 1:
                    raise
            # Refused, reset, timed out: the store may be restarting.
            except OSError:
                if attempt == PAGE_TRIES - 1:
                    raise
            time.sleep(1)
        raise AssertionError("unreachable")

    def _parse(self, raw: bytes) -> Tuple[Listing, Optional[str], str]:
        """(entries, the next page's token or None, its last key) of a ListObjectsV2 answer."""
        tree = ElementTree.fromstring(raw)
        ns = tree.tag[:tree.tag.index("}") + 1] if tree.tag.startswith("{") else ""
        # botocore asks for it: keys arrive escaped.
        url_encoded = tree.findtext(ns + "EncodingType") == "url"
        entries: Listing = {}
        key = ""
        for item in tree.iter(ns + "Contents"):
            key = item.findtext(ns + "Key") or ""
            if url_encoded:
                key = urllib.parse.unquote_plus(key)
            # A "directory" marker is no file.
            if key and not key.endswith("/"):
                entries["%s/%s" % (self.bucket, key)] = {"type": "file", "size": int(item.findtext(ns + "Size") or 0),
                                                         "ETag": item.findtext(ns + "ETag")}
        truncated = tree.findtext(ns + "IsTruncated") == "true"
        return entries, tree.findtext(ns + "NextContinuationToken") if truncated else None, key

    def _fall_back(self, exc: Exception) -> Listing:
        if self._fallback is None:
            log.warning("mirror: %s refuses presigned requests (%s); reading it through s3fs while it does",
                        self.url, exc)
            self._fallback = FsspecReader(self.url)
        self._refused = True
        return self._fallback.listing()

    def read_ranges(self, keys: Sequence[str], starts: Sequence[int],
                    ends: Sequence[int]) -> List[Union[bytes, BaseException]]:
        if self._refused and self._fallback is not None:
            return self._fallback.read_ranges(keys, starts, ends)
        urls = [self._presign("get_object", Key=key.split("/", 1)[1]) for key in keys]
        return asyncio.run(self._read_all(urls, starts, ends))

    async def _read_all(self, urls: Sequence[str], starts: Sequence[int],
                        ends: Sequence[int]) -> List[Union[bytes, BaseException]]:
        import aiohttp

        limit = asyncio.Semaphore(CONCURRENT)
        timeout = aiohttp.ClientTimeout(total=REQUEST_SECS, connect=5)
        async with aiohttp.ClientSession(timeout=timeout) as session:

            async def read(url: str, start: int, end: int) -> bytes:
                async with limit:
                    headers = {"Range": "bytes=%d-%d" % (start, end - 1)}
                    async with session.get(url, headers=headers) as response:
                        data = await response.read()
                        if response.status not in (200, 206):
                            raise OSError("%d %s: %r" % (response.status, response.reason, data[:200]))
                        return data if response.status == 206 else data[start:end]

            return await asyncio.gather(*(read(u, s, e) for u, s, e in zip(urls, starts, ends)),
                                        return_exceptions=True)
