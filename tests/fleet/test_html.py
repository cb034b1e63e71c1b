"""The HTML report of a scan in a real headless Chromium: its plots render (a screenshot, kept in the
test's folder and under $ROOTRANK_TEST_OUTPUT when set) and it makes no network request (every
request Chromium makes goes to a recording proxy here; a page with a remote image proves the proxy
would see one)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from rootrank.fleet.html import BAR_FAILED, render_html
from rootrank.fleet.views import summarize_fleet
from tests.fleet.conftest import Fleet
from tests.heavy import require_program

# Chromium's own services (clock, component updater, accounts) call out from any page, even a blank
# one, whatever the switches say; what a page itself fetches goes to the hosts it names.
BROWSER_SERVICES = re.compile(r"^(?:[\w-]+\.)*(?:google\.com|googleapis\.com|gvt1\.com|gstatic\.com)$")


class RecordingProxy:
    """A listening socket that records the host of every request made to it, and answers none."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.hosts: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            client.settimeout(5)
            try:
                first = client.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
            except OSError:
                first = ""
            client.close()
            # "CONNECT host:443 HTTP/1.1" or "GET http://host/path HTTP/1.1"
            target = first.split(" ")[1] if first.count(" ") >= 2 else first
            self.hosts.append(urlsplit(target if "//" in target else f"//{target}").hostname or target)

    def page_requests(self) -> list[str]:
        return [h for h in self.hosts if not BROWSER_SERVICES.match(h)]

    def close(self) -> None:
        self._server.close()


@pytest.fixture()
def proxy() -> Iterator[RecordingProxy]:
    server = RecordingProxy()
    yield server
    server.close()


def _screenshot(chromium: str, page: Path, shot: Path, proxy: RecordingProxy, profile: Path) -> None:
    subprocess.run([
        chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        f"--proxy-server=http://127.0.0.1:{proxy.port}", "--proxy-bypass-list=<-loopback>",
        "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
        "--disable-sync", "--no-first-run", "--disable-features=MediaRouter,OptimizationHints",
        f"--user-data-dir={profile}", "--window-size=1000,1400", "--virtual-time-budget=3000",
        f"--screenshot={shot}", page.as_uri(),
    ], capture_output=True, timeout=120, check=True)


def _pixels(png: Path) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, raw rows) of an 8-bit RGB(A) non-interlaced PNG."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos: pos + 8])
        body = data[pos + 8: pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and color in (2, 6) and header[12] == 0
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray()
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1: (y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = previous[x]
            c = previous[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line
        previous = line
    return width, height, bpp, bytes(out)


def test_report_renders_its_plots_offline(fleet: Fleet, tmp_path: Path, proxy: RecordingProxy) -> None:
    chromium = require_program("chromium")
    page = tmp_path / "fleet.html"
    page.write_text(render_html(fleet.local.rows, summarize_fleet(list(fleet.local.rows))), encoding="utf-8")
    shot = tmp_path / "fleet.png"
    _screenshot(chromium, page, shot, proxy, tmp_path / "profile")
    if os.environ.get("ROOTRANK_TEST_OUTPUT"):
        Path(os.environ["ROOTRANK_TEST_OUTPUT"]).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(os.environ["ROOTRANK_TEST_OUTPUT"]) / "fleet-report.png")
    assert proxy.page_requests() == [], "the report made a network request"
    width, height, bpp, pixels = _pixels(shot)
    red = bytes.fromhex(BAR_FAILED[1:])
    rows_with_red = {i // (width * bpp) for i in range(0, len(pixels), bpp) if pixels[i: i + 3] == red}
    # Both plots drew bars: the weeks' near the top, the hosts' further down.
    assert len(rows_with_red) > 100, f"few red pixels in {shot}"
    assert min(rows_with_red) < height // 3 < max(rows_with_red)


def test_the_proxy_sees_a_page_that_fetches(tmp_path: Path, proxy: RecordingProxy) -> None:
    chromium = require_program("chromium")
    page = tmp_path / "remote.html"
    page.write_text('<!DOCTYPE html><img src="http://rootrank-test.invalid/x.png">', encoding="utf-8")
    _screenshot(chromium, page, tmp_path / "remote.png", proxy, tmp_path / "profile")
    assert "rootrank-test.invalid" in proxy.page_requests()
