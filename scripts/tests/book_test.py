#!/usr/bin/python3
"""Book suite: the site scripts/book.sh builds, read by a real browser.

  book_test.py SOURCE_ROOT BUILD_DIR
  book_test.py --self-test

Builds the book into BUILD_DIR/book (scripts/book.sh, which must exit 0),
then opens every page of it from the folder (file://, as a reader who
unpacked it would) in headless Chromium and checks, naming the page and the
link or element on each failure:

  - no console error, and no request that leaves the site (anything but a
    file under it, a data: or a blob: URL);
  - every link inside the site lands: its file exists and, with a #anchor,
    the page has an element with that id (or name);
  - each ```mermaid block of the chapter's source became an SVG, and its
    ```cpp, ```console and ```sh blocks are highlighted (token classes);
  - no markdown is left as text (a list run into a paragraph, a **bold**
    or a [link](...) not rendered);
  - each image loaded (a figure that does not load has no width);
  - the language switch in the header names this page's twin in the other
    edition, and clicking it on chapter 04 lands there, both ways;
  - scripts/book.sh --serve serves it on localhost: chapter 04 of each
    edition loads there, its diagram drawn, nothing fetched elsewhere;
  - the search finds, for a term in each language, the chapter it belongs
    to among its first three pages (SEARCHES below);
  - no page names a host outside the site, other than the few kinds of
    reference the browser never follows (HOST_RULES, each with its why, or a
    source the chapters cite); the list is printed.

Before the book, the checker runs on a two-page site made to fail (a
broken link, a missing anchor, an off-site image, a console error, an
undrawn diagram) and must report each; alone with --self-test. Exits 77,
saying why, when Chromium, its driver, selenium or the book's tools are
missing (scripts/install_deps.sh without --no-docs brings them).
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

SKIP = 77

# (edition, query, the page the query must find among the first three)
SEARCHES = [
    ("en", "responder_resources", "07-cm-events.html"),
    ("en", "memlock", "02-pd-mr.html"),
    ("zh", "内存注册", "02-pd-mr.html"),
    ("zh", "共享接收队列", "06-srq-credits.html"),
]

# What a built file may name outside the site, each with why it stays:
# (what the rule matches, in which files, why). Anything else fails.
HOST_RULES = [
    (r"^http://www\.w3\.org/(2000/svg|1999/xlink|1999/02/22-rdf-syntax-ns#|Graphics/SVG/1\.1/DTD/svg11\.dtd)$", None,
     "an XML namespace or DTD name in an SVG: an identifier, never fetched"),
    (r"^http://(creativecommons\.org/ns#|purl\.org/dc/)", r"\.svg$",
     "the RDF metadata matplotlib writes into a figure: identifiers, never fetched"),
    (r"^https://matplotlib\.org/$", r"\.svg$", "the figure's creator, in its metadata: text, never fetched"),
    (r"^https://fontawesome\.com", r"assets/stylesheets/.*\.css$", "the icon font's licence, in a comment"),
    (r".", r"^(zh/)?assets/(javascripts|vendor|book)/.*\.js$",
     "in the theme's, lunr's or mermaid's code: what the browser fetches is checked page by page"),
    (r".", r"^code/", "the code's own text, shown on its page, never fetched"),
]

# Make every shadow root open: the theme draws a mermaid diagram into a
# closed one, which a script (this test) could not look into.
OPEN_SHADOWS = ("const attach = Element.prototype.attachShadow;"
                "Element.prototype.attachShadow = function (init) {"
                "  return attach.call(this, Object.assign({}, init, { mode: 'open' })); };")

PAGE_FACTS = r"""
const ids = [...document.querySelectorAll('[id]')].map(e => e.id)
  .concat([...document.querySelectorAll('a[name]')].map(e => e.name));
const links = [...document.querySelectorAll('a[href]')].map(a => [a.getAttribute('href'), a.href, (a.innerText || a.title || '').trim().slice(0, 60)]);
const images = [...document.querySelectorAll('img')].map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0]);
const diagrams = [...document.querySelectorAll('div.mermaid')].map(d => !!(d.shadowRoot && d.shadowRoot.querySelector('svg')));
const undrawn = document.querySelectorAll('pre.mermaid').length;
const highlighted = [...document.querySelectorAll('div.highlight code')]
  .filter(c => c.querySelector('span[class]:not([class=""])')).length;
// Markdown the renderer left as text: a list item run into a paragraph, a
// **bold** or a [link](target) not rendered (code spans apart).
const leaks = [...document.querySelectorAll('.md-content p, .md-content li')].map(p => {
  const c = p.cloneNode(true);
  c.querySelectorAll('code, pre, ul, ol').forEach(e => e.remove());
  return c.textContent;
}).filter(t => /\n\s*[-*+] \S|\*\*\S|\]\([^)\s]+\)/.test(t)).map(t => t.trim().slice(0, 80));
const alternates = [...document.querySelectorAll('a.md-select__link[hreflang]')].map(a => [a.hreflang, a.href]);
return {ids, links, images, diagrams, undrawn, highlighted, leaks, alternates};
"""


def browser():
    """A headless Chromium under selenium, or a reason it cannot start."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None, "python3-selenium is not installed (scripts/install_deps.sh)"
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    if not binary or not os.path.exists(driver):
        return None, "chromium and chromium-driver are not installed (scripts/install_deps.sh)"
    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-background-networking", "--window-size=1280,900"):
        options.add_argument(arg)
    options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    drv = webdriver.Chrome(service=Service(driver), options=options)
    drv.set_page_load_timeout(60)
    drv.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OPEN_SHADOWS})
    return drv, None


class Checker:
    def __init__(self, drv, site):
        self.drv = drv
        self.site = Path(site).resolve()
        self.failures = []
        self.facts = {}
        self.links = 0
        self.citations = 0
        self.served = None
        self.cited = set()  # the URLs the chapters cite (cited_urls)

    def fail(self, page, what):
        self.failures.append(f"{page}: {what}")

    def rel(self, path):
        return str(Path(path).resolve().relative_to(self.site))

    def site_path(self, url):
        """The file under the site a file:// URL names, or None."""
        parts = urlsplit(url)
        if parts.scheme != "file":
            return None
        path = Path(unquote(parts.path))
        try:
            path.resolve().relative_to(self.site)
        except ValueError:
            return None
        return path

    def requests_and_errors(self, page):
        for entry in self.drv.get_log("browser"):
            if entry["level"] == "SEVERE":
                self.fail(page, f"console error: {entry['message']}")
        for entry in self.drv.get_log("performance"):
            msg = json.loads(entry["message"])["message"]
            if msg["method"] != "Network.requestWillBeSent":
                continue
            url = msg["params"]["request"]["url"]
            if url.startswith(("data:", "blob:")) or self.site_path(url) is not None:
                continue
            if self.served and url.startswith(self.served):
                continue
            self.fail(page, f"a request leaves the site: {url[:120]}")

    def load(self, path, diagrams_expected=0, wait=20):
        page = self.rel(path)
        facts = self.open(path.as_uri(), wait)
        self.requests_and_errors(page)
        self.facts[page] = facts
        for text in facts["leaks"]:
            self.fail(page, f"markdown left as text: {text!r}")
        for src, ok in facts["images"]:
            if not ok:
                self.fail(page, f"image {src} did not load")
        drawn = sum(facts["diagrams"])
        if facts["undrawn"] or drawn != diagrams_expected:
            self.fail(page, f"{drawn} mermaid diagrams drawn as SVG, the chapter has {diagrams_expected}"
                            + (f" ({facts['undrawn']} left as text)" if facts["undrawn"] else ""))
        return facts

    def open(self, url, wait=20):
        """Load a page and read its facts once the theme has drawn its
        diagrams (it does so after the page has loaded)."""
        self.drv.get(url)
        deadline = time.monotonic() + wait
        facts = self.drv.execute_script(PAGE_FACTS)
        while facts["undrawn"] and time.monotonic() < deadline:
            time.sleep(0.2)
            facts = self.drv.execute_script(PAGE_FACTS)
        return facts

    def check_links(self):
        targets = {}  # a link's URL without its anchor -> (its page, or None; why not)
        for page, facts in self.facts.items():
            for raw, url, text in facts["links"]:
                base, _, anchor = url.partition("#")
                if base.startswith(("javascript:", "mailto:")):
                    continue
                if base not in targets:
                    targets[base] = self.target_of(base)
                there, why = targets[base]
                if there is None and why == "off":
                    if raw in self.cited:
                        self.citations += 1
                    else:
                        self.fail(page, f"link {raw!r} ({text!r}) leaves the site")
                    continue
                self.links += 1
                if there is None:
                    self.fail(page, f"link {raw!r} ({text!r}) {why}")
                    continue
                anchor = unquote(anchor)
                if not anchor:
                    continue
                if there not in self.facts:
                    self.fail(page, f"link {raw!r} ({text!r}) has an anchor into {there}, which is no page")
                    continue
                if anchor not in self.facts[there].setdefault("id_set", set(self.facts[there]["ids"])):
                    self.fail(page, f"link {raw!r} ({text!r}): {there} has no anchor #{anchor}")

    def target_of(self, url):
        """(the site page a link's URL names, None) or (None, why it lands nowhere)."""
        target = self.site_path(url)
        if target is None:
            parts = urlsplit(url)
            if parts.scheme == "file":
                return None, f"lands outside the site, at {unquote(parts.path)} (a link the book could not place)"
            return None, "off"
        if not target.exists():
            return None, f"lands nowhere: {target} does not exist"
        if target.is_dir():
            return None, "names a folder; from a local folder it opens no page"
        return self.rel(target), None


HIGHLIGHTED = ("cpp", "console", "sh")


def source_blocks(source_root, page):
    """(mermaid blocks, blocks in a HIGHLIGHTED language) in the chapter
    behind a site page; (0, 0) for a page that is no chapter."""
    rel = page[:-len(".html")]
    md_dir = Path(source_root) / "docs"
    if rel.startswith("zh/"):
        md_dir, rel = md_dir / "zh", rel[3:]
    if rel == "index":
        rel = "README"
    md = md_dir / (rel + ".md")
    if not md.exists():
        return 0, 0
    langs = re.findall(r"^\s*```([\w+-]*)\s*$", md.read_text(encoding="utf-8"), re.M)[0::2]
    return langs.count("mermaid"), sum(langs.count(l) for l in HIGHLIGHTED)


def check_site(drv, source_root, site):
    c = Checker(drv, site)
    c.cited = cited_urls(source_root)
    site = c.site
    pages = sorted(site.rglob("*.html"))
    for path in pages:
        diagrams, highlighted = source_blocks(source_root, c.rel(path))
        facts = c.load(path, diagrams)
        if facts["highlighted"] < highlighted:
            c.fail(c.rel(path), f"{facts['highlighted']} code blocks highlighted, the chapter has "
                                f"{highlighted} ```{', ```'.join(HIGHLIGHTED)} blocks")
    c.check_links()
    chapters = [c.rel(p) for p in pages if not c.rel(p).startswith("code/")]
    check_twins(c, chapters)
    check_switch(c, "04-rdma-write.html", "zh/04-rdma-write.html")
    check_switch(c, "zh/04-rdma-write.html", "04-rdma-write.html")
    for edition, query, expected in SEARCHES:
        check_search(c, edition, query, expected)
    check_hosts(c)
    return c, len(pages), len(chapters)


def check_twins(c, chapters):
    """The header's language links: English names the English page, 中文 the
    Chinese one, and one of them is this page."""
    for page in chapters:
        alts = dict(c.facts[page]["alternates"])
        if set(alts) != {"en", "zh"}:
            c.fail(page, f"the language switch offers {sorted(alts)}, not English and 中文")
            continue
        here = c.site / page
        if (c.site_path(alts["zh" if page.startswith("zh/") else "en"]) or Path()).resolve() != here:
            c.fail(page, "the language switch does not name this page in its own language")
        other = c.site_path(alts["en" if page.startswith("zh/") else "zh"])
        twin = page[3:] if page.startswith("zh/") else "zh/" + page
        expected = c.site / twin if (c.site / twin).exists() else c.site / ("index.html" if page.startswith("zh/") else "zh/index.html")
        if other is None or other.resolve() != expected:
            c.fail(page, f"the language switch leads to {alts['en' if page.startswith('zh/') else 'zh']}, not {c.rel(expected)}")


def check_switch(c, page, twin):
    from selenium.webdriver.common.by import By
    c.drv.get((c.site / page).as_uri())
    lang = "zh" if twin.startswith("zh/") else "en"
    links = c.drv.find_elements(By.CSS_SELECTOR, f"a.md-select__link[hreflang={lang}]")
    if not links:
        c.fail(page, f"no language switch to {lang}")
        return
    c.drv.execute_script("arguments[0].click()", links[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not c.drv.current_url.split("#")[0].endswith("/" + twin):
        time.sleep(0.1)
    landed = c.site_path(c.drv.current_url)
    if landed is None or landed.resolve() != (c.site / twin).resolve():
        c.fail(page, f"the language switch landed on {c.drv.current_url}, not {twin}")
    c.requests_and_errors(page)


def check_search(c, edition, query, expected):
    from selenium.webdriver.common.by import By
    start = "04-rdma-write.html" if edition == "en" else "zh/04-rdma-write.html"
    want = expected if edition == "en" else "zh/" + expected
    c.drv.get((c.site / start).as_uri())
    # A narrow window shows a button that opens the search; this one, the box.
    box = c.drv.find_element(By.CSS_SELECTOR, "input.md-search__input")
    if not box.is_displayed():
        c.drv.find_element(By.CSS_SELECTOR, "label.md-header__button[for=__search]").click()
    box.send_keys(query)
    found, deadline = [], time.monotonic() + 20
    while time.monotonic() < deadline:
        found = c.drv.execute_script(
            "return [...document.querySelectorAll('.md-search-result__item > a')].map(a => a.href)")
        if found:
            break
        time.sleep(0.2)
    pages = []
    for url in found:
        path = c.site_path(url.split("?")[0].split("#")[0])
        page = c.rel(path) if path else url
        if page not in pages:
            pages.append(page)
    if want not in pages[:3]:
        c.fail(start, f"searching {query!r} finds {pages[:3] or 'nothing'}, not {want} among the first three")
    c.requests_and_errors(start)


def cited_urls(source_root):
    """Every URL the chapters write (a reader may follow one; the browser
    never fetches it)."""
    urls = set()
    for md in glob.glob(os.path.join(source_root, "docs", "**", "*.md"), recursive=True):
        urls.update(re.findall(r"https?://[\x21-\x7e]+", Path(md).read_text(encoding="utf-8")))
    return {u.rstrip(".,;)>`'\"*") for u in urls}


def check_served(c, source_root, site):
    """scripts/book.sh --serve: chapter 04 of each edition over http from
    localhost, its diagram drawn, no console error, no request elsewhere."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([str(Path(source_root) / "scripts/book.sh"), "--out", str(site), "--serve", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if server.poll() is not None:
                    break
                time.sleep(0.3)
        else:
            c.fail("--serve", f"nothing listens on {base} after 120 s")
            return
        if server.poll() is not None:
            c.fail("--serve", f"scripts/book.sh --serve exited {server.returncode}: {server.stdout.read()[-500:]}")
            return
        c.served = base
        for page in ("04-rdma-write.html", "zh/04-rdma-write.html"):
            facts = c.open(base + page)
            c.requests_and_errors(base + page)
            if sum(facts["diagrams"]) != 1 or facts["undrawn"]:
                c.fail(base + page, "the sequence diagram is not drawn as an SVG")
    finally:
        os.killpg(server.pid, 15)
        server.wait()


def check_hosts(c):
    """Every http(s) URL written in a built file: each must have a reason
    (HOST_RULES, or a citation the chapters make), and the list is printed."""
    reasons = {}
    for path in sorted(c.site.rglob("*")):
        if not path.is_file() or path.suffix not in (".html", ".js", ".css", ".json", ".svg", ".xml"):
            continue
        where = c.rel(path)
        text = path.read_text(encoding="utf-8", errors="replace")
        for url in set(re.findall(r"https?://[\x21-\x7e]+", text)):
            url = re.split(r"[\"'<>()\\`]", url)[0].rstrip(".,;")
            why = next((r for p, f, r in HOST_RULES if re.search(p, url) and (f is None or re.search(f, where))), None)
            if why is None and url in c.cited and (path.suffix == ".html" or path.name.startswith("search_index.")):
                why = "a source the chapters cite, a link the reader may follow, never fetched"
            if why is None:
                c.fail(where, f"names a host outside the site: {url}")
                continue
            hosts, files = reasons.setdefault(why, (set(), set()))
            hosts.add(urlsplit(url).netloc)
            files.add(where.split("/")[0] if where.startswith(("code/", "zh/")) else where)
    print("book_test: hosts the built files name, and why each stays:")
    for why, (hosts, files) in sorted(reasons.items()):
        print(f"  {why}: {', '.join(sorted(hosts))} (in {len(files)} files or folders)")


def self_test(drv):
    """The checker on a site made to fail: each fault must be reported."""
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp)
        (site / "a.html").write_text(
            '<!doctype html><html><head><meta charset="utf-8"></head><body>'
            '<h1 id="top">a</h1><a href="b.html#there">ok</a> <a href="b.html#nowhere">anchor</a> '
            '<a href="gone.html">gone</a> <img src="missing.svg"> '
            '<img src="http://127.0.0.1:9/x.png"> <pre class="mermaid">graph LR; A-->B</pre>'
            '<div class="md-content"><p>items:\n- **one** left as text</p></div>'
            '<script>console.error("made to fail")</script></body></html>', encoding="utf-8")
        (site / "b.html").write_text('<!doctype html><html><body><p id="there">b</p>'
                                     '<a href="a.html#top">back</a></body></html>', encoding="utf-8")
        c = Checker(drv, site)
        started = time.monotonic()
        c.load(site / "a.html", 1, wait=2)
        c.load(site / "b.html", 0)
        c.check_links()
        expected = ["#nowhere", "gone.html", "missing.svg", "leaves the site: http://127.0.0.1:9",
                    "made to fail", "mermaid diagrams drawn", "markdown left as text"]
        missed = [e for e in expected if not any(e in f for f in c.failures)]
        wrong = [f for f in c.failures if "#there" in f or "#top" in f]
        for f in c.failures:
            print(f"  self-test reported: {f}")
        if missed or wrong:
            print(f"book_test: self-test FAILED: not reported {missed}; reported wrongly {wrong}")
            return False
        print(f"book_test: self-test: the checker reported all {len(expected)} faults "
              f"({time.monotonic() - started:.1f} s)")
        return True


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        source_root = build_dir = None
    elif len(argv) == 3:
        source_root, build_dir = argv[1], argv[2]
    else:
        print(__doc__)
        return 2
    drv, why = browser()
    if drv is None:
        print(f"book_test: skipped: {why}")
        return SKIP
    try:
        if not self_test(drv):
            return 1
        if source_root is None:
            return 0
        site = Path(build_dir) / "book"
        started = time.monotonic()
        build = subprocess.run([str(Path(source_root) / "scripts/book.sh"), "--out", str(site)],
                               capture_output=True, text=True)
        print(build.stdout + build.stderr, end="")
        if build.returncode != 0:
            if "cannot build the site; missing" in build.stderr:
                print("book_test: skipped: the book's tools are missing (above)")
                return SKIP
            print(f"book_test: scripts/book.sh exited {build.returncode}")
            return 1
        built = time.monotonic() - started
        c, pages, chapters = check_site(drv, source_root, site)
        check_served(c, source_root, site)
        for f in c.failures:
            print(f"FAIL {f}")
        print(f"book_test: {pages} pages opened ({chapters} of chapters, {pages - chapters} of code), "
              f"{c.links} links inside the site followed, {c.citations} to sources the chapters cite, {len(SEARCHES)} searches, "
              f"chapter 04 served by --serve{'' if c.served else ' NOT'} checked, {len(c.failures)} failures; build {built:.0f} s, browser {time.monotonic() - started - built:.0f} s")
        return 1 if c.failures else 0
    finally:
        drv.quit()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
