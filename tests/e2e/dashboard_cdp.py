#!/usr/bin/python3
"""A small DevTools-protocol client for tests/e2e/dashboard_e2e.sh: drives the one page of a
headless Chromium started with --remote-debugging-port over python3-websocket.

Usage:
  dashboard_cdp.py PORT open URL          navigate the page to URL
  dashboard_cdp.py PORT state             print what the dashboard shows, as JSON
  dashboard_cdp.py PORT expect PYEXPR     exit 0 when PYEXPR holds of the state `s` (and `env`,
                                          the environment); else print the state and exit 1
  dashboard_cdp.py PORT shot FILE         write a PNG screenshot of the viewport to FILE
  dashboard_cdp.py PORT keys N            press Tab N times; print the focused element's
                                          aria-label (or its text)

The state, read from the page's DOM (what a person sees, not the page's variables):
  live     the page says all its watches are up (body[data-live])
  banner   the banner's text, "" when hidden
  gpus     {"NODE/INDEX": "NAMESPACE/POD" or "free"}
  colours  {"NODE/INDEX": the cell's computed background colour}
  partial  the GPU cells marked as held by a partly bound gang
  pending  {"GANG": {"reason": ..., "start": ..., "startAt": RFC 3339 or ""}} from the
           pending-gangs table
  summary  the header's summary line
  cycle    the header's scheduler cycle latency
"""

import base64
import json
import os
import sys
import urllib.request

import websocket

STATE_JS = r"""
(() => {
  const text = (e) => (e ? e.textContent.trim() : '');
  const gpus = {};
  const colours = {};
  const partial = [];
  for (const cell of document.querySelectorAll('[data-gpu]')) {
    gpus[cell.dataset.gpu] = cell.dataset.pod || 'free';
    colours[cell.dataset.gpu] = getComputedStyle(cell).backgroundColor;
    if (cell.classList.contains('partial')) partial.push(cell.dataset.gpu);
  }
  const pending = {};
  for (const row of document.querySelectorAll('#pending-table tbody tr[data-podgroup]')) {
    const cells = row.querySelectorAll('td');
    pending[row.firstElementChild.childNodes[0].textContent.trim()] = {
      podgroup: row.dataset.podgroup, queue: text(cells[1]), phase: text(cells[3]),
      reason: text(cells[4]), start: text(cells[5]),
      startAt: (cells[5].querySelector('time') || {}).dateTime || '',
    };
  }
  const banner = document.getElementById('banner');
  return JSON.stringify({
    live: document.body.dataset.live === 'true',
    banner: banner.hidden ? '' : text(banner),
    gpus, colours, partial, pending,
    summary: text(document.getElementById('summary')),
    cycle: text(document.getElementById('cycle')),
  });
})()
"""


class Page:
    def __init__(self, port):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        page = next(t for t in targets if t.get("type") == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30,
                                              suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(json.dumps(result["exceptionDetails"]))
        return result["result"].get("value")


def main(argv):
    port, command, args = argv[1], argv[2], argv[3:]
    page = Page(port)
    if command == "open":
        page.call("Page.navigate", url=args[0])
    elif command == "state":
        print(page.evaluate(STATE_JS))
    elif command == "expect":
        state = json.loads(page.evaluate(STATE_JS))
        if not eval(args[0], {"s": state, "env": os.environ}):  # the test's own expression
            print(json.dumps(state, indent=1))
            return 1
    elif command == "shot":
        # A session's emulation ends with it: set for this capture.
        page.call("Emulation.setDeviceMetricsOverride", width=1280, height=800,
                  deviceScaleFactor=1, mobile=False)
        png = page.call("Page.captureScreenshot", format="png")["data"]
        with open(args[0], "wb") as f:
            f.write(base64.b64decode(png))
    elif command == "keys":
        for _ in range(int(args[0])):
            for kind in ("keyDown", "keyUp"):
                page.call("Input.dispatchKeyEvent", type=kind, key="Tab", code="Tab",
                          windowsVirtualKeyCode=9)
        print(page.evaluate("(document.activeElement.getAttribute('aria-label') || "
                            "document.activeElement.textContent).trim()"))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
