"""The docs' screenshots come from browser tests only when asked for (GOLDKEY_SCREENSHOTS)."""

from pathlib import Path

from tests.conftest import REPO_ROOT, save_screenshot, screenshot_folder


class RecordingPage:
    """Records what a Playwright page was asked to do (the helper's own logic is under test here; the
    browser tests call it on real pages)."""

    def __init__(self):
        self.calls = []

    def set_viewport_size(self, size):
        self.calls.append(("viewport", size))

    def screenshot(self, *, path):
        Path(path).write_bytes(b"\\x89PNG")
        self.calls.append(("screenshot", path))


def test_without_the_variable_nothing_is_written(monkeypatch):
    monkeypatch.delenv("GOLDKEY_SCREENSHOTS", raising=False)
    page = RecordingPage()
    assert screenshot_folder() is None
    assert save_screenshot(page, "queue") is None and page.calls == []


def test_one_means_the_docs_folder_and_a_path_is_taken_as_given(monkeypatch, tmp_path):
    monkeypatch.setenv("GOLDKEY_SCREENSHOTS", "1")
    assert screenshot_folder() == REPO_ROOT / "docs" / "screenshots"
    monkeypatch.setenv("GOLDKEY_SCREENSHOTS", "docs/screenshots")
    assert screenshot_folder() == REPO_ROOT / "docs" / "screenshots"
    monkeypatch.setenv("GOLDKEY_SCREENSHOTS", str(tmp_path / "shots"))
    page = RecordingPage()
    written = save_screenshot(page, "agreement")
    assert written == tmp_path / "shots" / "agreement.png" and written.exists()
    assert page.calls == [("viewport", {"width": 1280, "height": 800}), ("screenshot", str(written))]
