#!/usr/bin/python3
"""Drive Debian's headless Chromium over the DevTools protocol (python3-websocket):
open URL, take a screenshot, report every link of the page with its box on the
screen, click (a real mouse press and release at its box) the link whose text is
CLICK and wait for the download it starts.

usage: browser.py URL CLICK OUTDIR
Prints one JSON object: {"title", "text", "links": [{"text","href","x","y","w","h"}],
"screenshot": path, "download": path or null, "content_type"}.
The server's certificate is pinned by its public key (Chromium's
--ignore-certificate-errors-spki-list), read from the server with openssl.
"""
import base64, json, os, shutil, subprocess, sys, tempfile, time
from urllib.parse import urlsplit

import websocket

url, click, outdir = sys.argv[1:4]
host = urlsplit(url)
pem = subprocess.run(
    ["openssl", "s_client", "-connect", f"{host.hostname}:{host.port}", "-servername", host.hostname],
    input=b"", capture_output=True, timeout=30).stdout
cert = pem[pem.index(b"-----BEGIN CERTIFICATE-----"):pem.index(b"-----END CERTIFICATE-----") + 25]
pub = subprocess.run(["openssl", "x509", "-pubkey", "-noout"], input=cert, capture_output=True).stdout
der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=pub, capture_output=True).stdout
spki = base64.b64encode(subprocess.run(["openssl", "dgst", "-sha256", "-binary"], input=der,
                                       capture_output=True).stdout).decode()

profile = tempfile.mkdtemp(prefix="chromium-")
downloads = os.path.join(outdir, "downloads")
os.makedirs(downloads, exist_ok=True)
proc = subprocess.Popen(
    ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
     "--disable-background-networking", "--disable-component-update", "--disable-sync",
     "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
     f"--user-data-dir={profile}", f"--ignore-certificate-errors-spki-list={spki}",
     "--window-size=1200,900", "about:blank"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    port_file = os.path.join(profile, "DevToolsActivePort")
    for _ in range(300):
        if os.path.exists(port_file) and len(open(port_file).read().split()) == 2:
            break
        time.sleep(0.1)
    port, path = open(port_file).read().split()
    ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=60)
    seq = [0]
    events = []

    def call(method, params=None, session=None):
        seq[0] += 1
        msg = {"id": seq[0], "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        ws.send(json.dumps(msg))
        while True:
            m = json.loads(ws.recv())
            if m.get("id") == seq[0]:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            events.append(m)

    def wait_event(name, pred=lambda p: True, limit=60):
        end = time.time() + limit
        while time.time() < end:
            for i, m in enumerate(events):
                if m.get("method") == name and pred(m.get("params", {})):
                    return events.pop(i)["params"]
            ws.settimeout(max(0.1, end - time.time()))
            try:
                events.append(json.loads(ws.recv()))
            except websocket.WebSocketTimeoutException:
                break
        raise RuntimeError(f"no {name} within {limit} s")

    call("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads,
                                         "eventsEnabled": True})
    target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    call("Page.enable", session=s)
    call("Page.navigate", {"url": url}, session=s)
    wait_event("Page.loadEventFired")
    js = """JSON.stringify({title: document.title, text: document.body.innerText,
      content_type: document.contentType,
      links: Array.from(document.querySelectorAll('a')).map(a => {
        const r = a.getBoundingClientRect();
        return {text: a.textContent, href: a.getAttribute('href'), x: r.x, y: r.y, w: r.width, h: r.height};
      })})"""
    page = json.loads(call("Runtime.evaluate", {"expression": js, "returnByValue": True},
                           session=s)["result"]["value"])
    shot = call("Page.captureScreenshot", {"format": "png"}, session=s)["data"]
    page["screenshot"] = os.path.join(outdir, "listing.png")
    with open(page["screenshot"], "wb") as f:
        f.write(base64.b64decode(shot))
    page["download"] = None
    link = next((l for l in page["links"] if l["text"] == click), None)
    if link:
        x, y = link["x"] + link["w"] / 2, link["y"] + link["h"] / 2
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left",
                                              "clickCount": 1}, session=s)
        begin = wait_event("Browser.downloadWillBegin")
        wait_event("Browser.downloadProgress",
                   lambda p: p.get("guid") == begin["guid"] and p.get("state") == "completed")
        page["download"] = os.path.join(downloads, begin["suggestedFilename"])
    print(json.dumps(page))
finally:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(profile, ignore_errors=True)
