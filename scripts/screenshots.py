"""Screenshots of a running demo for the README: `make demo`, then

    .venv/bin/python scripts/screenshots.py [--base-url http://127.0.0.1:8000] [--out docs]

Logs in with the demo accounts through the real login form (system Chromium via Playwright) and saves one
PNG per page below; a page that does not answer 200 is skipped and reported.
"""

import argparse
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]  # fmt: skip
PAGES = [
    # (demo user, path, file name)
    ("ann1", "/", "home.png"),
    ("ann1", "/annotate/", "annotate.png"),
    ("author", "/adjudicate/", "adjudicate.png"),
    ("author", "/council/", "council.png"),
    ("author", "/keys/", "keys.png"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--out", type=Path, default=Path("docs"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS, headless=True)
        contexts = {}
        for user, path, name in PAGES:
            if user not in contexts:
                context = browser.new_context(base_url=args.base_url, viewport={"width": 1200, "height": 720})
                page = context.new_page()
                page.goto("/accounts/login/")
                page.fill("input[name=username]", user)
                page.fill("input[name=password]", f"{user}-demo")
                page.click("button[type=submit]")
                page.wait_for_load_state()
                contexts[user] = page
            page = contexts[user]
            response = page.goto(path)
            if response is None or response.status != 200:
                print(f"skipped {path} as {user}: HTTP {response.status if response else '?'}")
                continue
            page.screenshot(path=args.out / name, full_page=False)
            print(f"saved {args.out / name} ({path} as {user})")
        browser.close()


if __name__ == "__main__":
    main()
