"""The page the book's links open a lab through: the book's version first, a saved copy kept.

JupyterLite keeps what a reader saves in the browser (IndexedDB, the database ``JupyterLite
Storage - <the site's path>``, store ``files``, one entry per file), and a saved file hides
the site's file of the same name on every later visit. ``lab.html?lab=<notebook>`` moves
a saved copy of that lab aside, to ``<lab> (your copy, <date>).ipynb``, and opens the lab:
the book's version, since nothing hides it now. When copies are kept, it lists them first,
each a link, under a button to the book's version (focused: Enter opens it). Each lab's
links cell names the book's version by its file name, the way back from a copy.

Example:
    >>> from bookbuild.lite.launcher import launch_url
    >>> launch_url("03_sum_and_mean.ipynb")
    'lite/lab.html?lab=03_sum_and_mean.ipynb'
"""

from __future__ import annotations

from pathlib import Path

from bookbuild.lite.contents import SITE_FOLDER

PAGE = "lab.html"

LAUNCHER = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>mirrorbook lab</title>
<link rel="icon" href="notebooks/favicon.ico">
<style>
body { font: 16px/1.5 system-ui, sans-serif; margin: 0; color: #1f2328; background: #fff; }
main { max-width: 40em; margin: 0 auto; padding: 1.5em 1em; }
a { color: #0550ae; overflow-wrap: anywhere; }
a:focus, button:focus { outline: 3px solid #0550ae; outline-offset: 2px; }
.book { display: inline-block; padding: .5em 1em; background: #0550ae; color: #fff;
        border-radius: 6px; text-decoration: none; font-weight: 600; }
</style>
</head>
<body>
<main>
<h1 id="title">Opening the lab</h1>
<p id="status" role="status">Looking for a copy you saved in this browser...</p>
<div id="choice" hidden>
<p><a class="book" id="book" href="#">Open the book's version of this lab</a></p>
<p>Your saved copies, kept in this browser (open one to go on where you left off):</p>
<ul id="copies"></ul>
</div>
<noscript><p>This page needs JavaScript, as the labs do.</p></noscript>
</main>
<script>
(async () => {
  const lab = new URLSearchParams(location.search).get("lab") || "";
  const status = document.getElementById("status");
  if (!/^[\\w.-]+\\.ipynb$/.test(lab)) {
    status.textContent = "No lab is named here: follow a chapter's link to its lab.";
    return;
  }
  const open = path => "notebooks/index.html?path=" + encodeURIComponent(path);
  const stem = lab.replace(/\\.ipynb$/, "");
  let copies = [];
  try {
    copies = await keepCopy("JupyterLite Storage - " + new URL(".", location.href).pathname);
  } catch (error) {
    copies = [];  // no storage yet, or none allowed: nothing was saved
  }
  if (!copies.length) {
    location.replace(open(lab));
    return;
  }
  document.getElementById("title").textContent = stem + ": the book's version, or your copy?";
  status.textContent = "You saved this lab before. Your copy is kept; the book's version is new.";
  const book = document.getElementById("book");
  book.href = open(lab);
  const list = document.getElementById("copies");
  for (const name of copies.sort().reverse()) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = open(name);
    link.textContent = name;
    item.appendChild(link);
    list.appendChild(item);
  }
  document.getElementById("choice").hidden = false;
  book.focus();

  function keepCopy(database) {
    return new Promise((done, failed) => {
      const request = indexedDB.open(database);
      request.onupgradeneeded = () => request.transaction.abort();  // none: make none
      request.onerror = () => failed(request.error);
      request.onsuccess = () => {
        const db = request.result;
        if (!db.objectStoreNames.contains("files")) { db.close(); done([]); return; }
        const store = db.transaction("files", "readwrite").objectStore("files");
        const saved = store.get(lab);
        saved.onsuccess = () => {
          const model = saved.result;
          if (model) {
            const when = new Date(model.last_modified || Date.now());
            const stamp = when.toISOString().slice(0, 16).replace("T", " ").replace(":", "h");
            const name = stem + " (your copy, " + stamp + ").ipynb";
            store.put({...model, name: name, path: name}, name);
            store.delete(lab);
          }
          const keys = store.getAllKeys();
          keys.onsuccess = () => {
            db.close();
            done(keys.result.filter(k => String(k).startsWith(stem + " (your copy")));
          };
        };
        saved.onerror = () => failed(saved.error);
      };
    });
  }
})();
</script>
</body>
</html>
"""


def launch_url(lab: str) -> str:
    """The launcher's address for the lab notebook ``lab``, relative to the HTML book.

    Example:
        >>> launch_url("x.ipynb")
        'lite/lab.html?lab=x.ipynb'
    """
    return f"{SITE_FOLDER}/{PAGE}?lab={lab}"


def write_launcher(site: Path) -> Path:
    """Write the launcher page into the built site's folder; its path."""
    page = site / PAGE
    page.write_text(LAUNCHER, encoding="utf-8")
    return page
