"""Every kind of SVG Tessera writes, rendered by a real browser (headless Chromium) to PNG.

The pictures are made the way a user makes them: `tessera schedule --svg` (a simulated timeline),
`tessera train --plan pp=2 --schedule-svg` (the measured timeline of a real run) with `--trace-svg`
(the timeline of its trace: every op, action and transfer per device), `tessera
partition --show-svg` (sharding grids) and examples/04_comm_efficient (its bar charts). Each is
shown by Chromium as an image on a coloured page and screenshot; the picture's box in the PNG must
have exactly the size its root element declares (the SVG parsed and laid out as declared; a file
the browser refuses shows as a broken-image icon instead), and it must not be blank (a fair share
of its pixels not white, and several colours: boxes, text and lines were drawn). A structural check cannot see a picture that browsers refuse to draw; this can.

Usage: browser_svgs.py TESSERA_CLI COMM_EXAMPLE CHROMIUM SOURCE_DIR
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

from PIL import Image

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--force-device-scale-factor=1"]

CORPUS = ("Tessera trains a small model on this text. " * 40 + "\n") * 20


def declared_size(svg_text):
    root = re.search(r"<svg\b[^>]*>", svg_text)
    width = re.search(r'\bwidth="([0-9.]+)"', root.group(0))
    height = re.search(r'\bheight="([0-9.]+)"', root.group(0))
    return round(float(width.group(1))), round(float(height.group(1)))


# The page around a picture: a coloured page, the SVG as an image at its natural size on white. The
# window is larger than the picture (headless Chromium's viewport is smaller than its window), so
# the picture's box is found in the screenshot as the pixels that are not the page's colour.
PAGE_COLOUR = (18, 52, 86)
PAGE = """<!DOCTYPE html><html><body style="margin:0;background:rgb(18,52,86)">
<img src="{src}" style="display:block;background:white"></body></html>"""


def render(chromium, svg_path, png_path, size, profile):
    page = svg_path + ".html"
    with open(page, "w") as f:
        f.write(PAGE.format(src=os.path.basename(svg_path)))
    cmd = [chromium] + CHROMIUM_FLAGS + [f"--user-data-dir={profile}", f"--window-size={size[0] + 200},{size[1] + 300}",
                                         f"--screenshot={png_path}", "file://" + os.path.abspath(page)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90)


def main():
    cli, comm_example, chromium, source = (os.path.abspath(a) for a in sys.argv[1:5])
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok   " if ok else "FAIL ") + what, flush=True)
        failures += 0 if ok else 1

    with tempfile.TemporaryDirectory() as d:
        svgs = []

        def make(what, cmd, cwd=None):
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=cwd)
            check(run.returncode == 0, f"{what}: {' '.join(os.path.basename(c) for c in cmd[:2])} exits 0 "
                                       f"{run.stderr.strip()[-300:]}")

        make("schedule", [cli, "schedule", "--kind", "interleaved", "--stages", "2", "--microbatches", "4",
                          "--virtual", "2", "--svg", os.path.join(d, "schedule.svg")])
        svgs.append(os.path.join(d, "schedule.svg"))
        corpus = os.path.join(d, "corpus.txt")
        with open(corpus, "w") as f:
            f.write(CORPUS)
        make("measured pipeline", [cli, "train", "--corpus", corpus, "--plan", "pp=2", "--devices", "2",
                                   "--microbatches", "4", "--steps", "3", "--d-model", "32", "--layers", "2",
                                   "--heads", "4", "--kv-heads", "2", "--ffn", "64", "--batch", "8", "--seq", "16",
                                   "--sample", "0", "--no-progress-bar", "--schedule-svg", os.path.join(d, "measured.svg"),
                                   "--trace", os.path.join(d, "trace.json"), "--trace-svg", os.path.join(d, "trace.svg")])
        svgs += [os.path.join(d, "measured.svg"), os.path.join(d, "trace.svg")]
        make("sharding grids", [cli, "partition", os.path.join(source, "examples", "01_sharded_loss.mlir"),
                                "--show-svg", os.path.join(d, "grids")])
        svgs += [os.path.join(d, "grids", n) for n in ("arg0.svg", "arg1.svg", "result0.svg")]
        make("communication bars", [comm_example], cwd=d)
        svgs += [os.path.join(d, n) for n in ("comm_efficient_storage.svg", "comm_efficient_bytes.svg")]

        for i, svg in enumerate(svgs):
            name = os.path.relpath(svg, d)
            if not os.path.exists(svg):
                check(False, f"{name} was written")
                continue
            with open(svg) as f:
                size = declared_size(f.read())
            png = os.path.join(d, f"shot{i}.png")
            profile = os.path.join(d, f"profile{i}")
            run = render(chromium, svg, png, size, profile)
            shutil.rmtree(profile, ignore_errors=True)
            if not os.path.exists(png):
                check(False, f"{name}: Chromium wrote no screenshot (exit {run.returncode}): {run.stderr.strip()[-400:]}")
                continue
            image = Image.open(png).convert("RGB")
            # The picture's box: where the page's colour is not (the image is drawn on white).
            page_pixels = image.load()
            xs, ys = [], []
            for y in range(image.size[1]):
                for x in range(image.size[0]):
                    if page_pixels[x, y] != PAGE_COLOUR:
                        xs.append(x)
                        ys.append(y)
            box = (max(xs) - min(xs) + 1, max(ys) - min(ys) + 1) if xs else (0, 0)
            check(box == size, f"{name}: the browser drew it {box[0]}x{box[1]}, the SVG declares {size[0]}x{size[1]}")
            if not xs:
                continue
            picture = image.crop((min(xs), min(ys), max(xs) + 1, max(ys) + 1))
            pixels = list(picture.getdata())
            drawn = sum(1 for p in pixels if p != (255, 255, 255)) / len(pixels)
            colours = len(set(pixels))
            check(drawn > 0.02 and colours >= 4,
                  f"{name}: not blank ({drawn:.1%} of its pixels not white, {colours} colours)")

    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
