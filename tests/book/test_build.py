"""The book builds offline from jupyter_book.toml and the HTML shows the stored outputs."""

import re

import pytest

from bookbuild.cells import colab_url

pytestmark = pytest.mark.book


def test_every_manifest_page_is_built(book_html, manifest):
    assert (book_html / "index.html").exists()
    for chapter in manifest["chapters"]:
        assert (book_html / f"{chapter['path'].stem}.html").exists()


def test_chapter_one_shows_its_outputs(book_html):
    page = (book_html / "01_strategy_scope.html").read_text()
    assert "MirroredVariable: 4 replicas" in page
    assert "tf.Variable (not distributed): one copy" in page
    assert "SUM : 60.0" in page
    assert "<strong>NOT YET</strong>: not attempted yet" in page


def test_widgets_show_their_snapshots_without_a_kernel(book_html):
    page = (book_html / "01_strategy_scope.html").read_text()
    assert page.count('class="mw-cell"') >= 8  # the replica grid: 4 before, 4 after
    assert "after all-reduce" in page
    assert 'class="mw-topology"' in page and "<svg" in page


def test_pages_load_nothing_from_the_network(book_html):
    for page in book_html.glob("*.html"):
        text = page.read_text()
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', text)
        assert remote == [], f"{page.name} loads {remote}"


def test_every_chapter_page_links_to_colab_and_shows_no_test_markers(book_html, manifest):
    for chapter in manifest["chapters"]:
        page = (book_html / f"{chapter['path'].stem}.html").read_text()
        assert f'href="{colab_url(manifest, chapter)}"' in page, chapter["file"]
        assert "NBVAL_" not in page and "# Why:" not in page, chapter["file"]
