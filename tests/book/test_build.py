"""The book builds offline from jupyter_book.toml and the HTML shows the stored outputs."""

import re

import pytest

import dev

pytestmark = pytest.mark.book


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    return dev.build_html(tmp_path_factory.mktemp("book"))


def test_every_manifest_page_is_built(html, manifest):
    assert (html / "index.html").exists()
    for chapter in manifest["chapters"]:
        assert (html / f"{chapter['path'].stem}.html").exists()


def test_chapter_one_shows_its_outputs(html):
    page = (html / "01_strategy_scope.html").read_text()
    assert "MirroredVariable: 4 replicas" in page
    assert "tf.Variable (not distributed): one copy" in page
    assert "SUM : 60.0" in page
    assert "<strong>NOT YET</strong>: not attempted yet" in page


def test_widgets_show_their_snapshots_without_a_kernel(html):
    page = (html / "01_strategy_scope.html").read_text()
    assert page.count('class="mw-cell"') >= 8  # the replica grid: 4 before, 4 after
    assert "after all-reduce" in page
    assert 'class="mw-topology"' in page and "<svg" in page


def test_pages_load_nothing_from_the_network(html):
    for page in html.glob("*.html"):
        text = page.read_text()
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', text)
        assert remote == [], f"{page.name} loads {remote}"
