"""``duel publish`` for real: a store of real shards (three runs, two machines, grown from a store
of version 2 holding two real generation runs) and a bisection's answer published as a static
site, every local link of every page resolving, and a headless
Chromium opening the index, a trend page and the bisections from file:// with no console error
and a drawn page (Chromium installed with apt where missing, tests/debian_packages.py)."""
import html.parser
import os
import re
import shutil
import subprocess
import urllib.parse

import numpy as np
import pytest
from PIL import Image

import debian_packages
from conftest import DUEL, RECORD, REPO, cell_rows
from duel.cell import shard
from duel.host.store import archive, ingest
from store_folders import judged

pytestmark = pytest.mark.install


# Chromium logs a page's console messages as lines holding "CONSOLE"; these are failures.
CONSOLE_ERROR = re.compile(r"error|uncaught|failed to load", re.IGNORECASE)


@pytest.fixture(scope="module")
def chromium():
    debian_packages.ensure({"chromium": "chromium"})
    return "chromium"


def results_folder(folder, scale, started_at, disturbed=False):
    """A results folder of real shards: gpt2 and bert, PyTorch and TensorFlow eager, every point
    still disturbed where ``disturbed``."""
    for framework, model, own in (("pytorch", "gpt2", 1.0), ("tensorflow", "gpt2", 1.6),
                                  ("pytorch", "bert", 2.0), ("tensorflow", "bert", 1.7)):
        rows = judged(cell_rows(framework, "eager", model, "duel", scale * own), disturbed)
        for row in rows:
            row["started_at"] = started_at
        shard.write_shard(rows, str(folder / "shards" / ("%s-%s.parquet" % (model, framework))))
    return str(folder)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A store of five runs (tests/data/store-8220d59's two generation runs; two on alpha, the
    second noisy; one on beta) and the site published from it."""
    base = tmp_path_factory.mktemp("publish")
    store = str(base / "store")
    shutil.copytree(os.path.join(REPO, "tests", "data", "store-8220d59"), store)
    for name, scale, started, machine in (("a", 1.0, "2026-01-01T08:00:00+00:00", "alpha"),
                                          ("b", 1.3, "2026-01-02T08:00:00+00:00", "alpha"),
                                          ("c", 1.1, "2026-01-02T09:00:00+00:00", "beta")):
        added = ingest.add_folder(store, results_folder(base / name, scale, started,
                                                        disturbed=name == "b"), machine,
                                  create=True)
        assert len(added) == 1, added
    archive.add_bisection(store, RECORD)
    out = str(base / "site")
    result = subprocess.run([*DUEL, "publish", out, "--store", store],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.targets.append(value)
            if name == "id":
                self.ids.add(value)


def pages(out):
    return sorted(os.path.join(folder, name) for folder, _, names in os.walk(out)
                  for name in names if name.endswith(".html"))


def test_every_page_is_there_and_every_link_resolves(site):
    found = [os.path.relpath(path, site) for path in pages(site)]
    assert {"index.html", "machines.html", "bisections.html"} <= set(found), found
    assert os.path.join("scope", "current_cpu_fp32_inference_duel.html") in found, found
    assert {os.path.join("model", "gpt2.html"), os.path.join("model", "bert.html")} <= set(found)
    ids = {}
    for path in pages(site):
        parser = Links()
        with open(path, encoding="utf-8") as handle:
            parser.feed(handle.read())
        ids[path] = (parser.ids, parser.targets)
    for path, (_, targets) in ids.items():
        for target in targets:
            parsed = urllib.parse.urlsplit(target)
            assert not parsed.scheme and not parsed.netloc, (path, target)  # nothing external
            resolved = os.path.normpath(os.path.join(os.path.dirname(path),
                                                     urllib.parse.unquote(parsed.path)))
            assert os.path.isfile(resolved), (path, target)
            if parsed.fragment and resolved.endswith(".html"):
                assert parsed.fragment in ids[resolved][0], (path, target)
    index = open(os.path.join(site, "index.html"), encoding="utf-8").read()
    assert "5 runs" in index and "alpha" in index and "beta" in index
    assert "<script" not in index.lower()
    noisy = "unrecorded, noisy: 12 of 12 points disturbed, steal 9%"
    assert index.count(noisy) == 1 and 'noisy">%s</td>' % noisy in index, index
    assert "A run is noisy where some of its points were still disturbed" in index
    for chart in (os.path.join("model", "gpt2_alpha_current_cpu_fp32_inference_duel.svg"),
                  os.path.join("scope", "current_cpu_fp32_inference_duel.svg")):
        assert "noisy run" in open(os.path.join(site, chart), encoding="utf-8").read(), chart
    assert "noisy run" not in open(os.path.join(
        site, "model", "gpt2_beta_current_cpu_fp32_inference_duel.svg"), encoding="utf-8").read()
    scope = open(os.path.join(site, "scope", "current_cpu_fp32_inference_duel.html"),
                 encoding="utf-8").read()
    assert "PyTorch eager vs TensorFlow eager" in scope and scope.count("<tr>") == 4, scope
    assert scope.count("</span>, noisy") == 1
    generated = open(os.path.join(site, "scope", "current_cpu_fp32_generation_duel.html"),
                     encoding="utf-8").read()
    assert "Text generation" in generated and "Generation: PyTorch eager vs TensorFlow eager" \
        in generated
    assert len(re.findall(r"<td[^>]*>0\.\d\d \[0\.\d\d, 0\.\d\d\] PyTorch faster</td>",
                          generated)) == 4, generated  # two runs, two times each
    chart = open(os.path.join(site, "scope", "current_cpu_fp32_generation_duel-generation.svg"),
                 encoding="utf-8").read()
    assert "Time to first token" in chart and "Time per output token" in chart
    assert "generation" not in open(os.path.join(
        site, "scope", "current_cpu_fp32_inference_duel.html"), encoding="utf-8").read().lower()
    bisections = open(os.path.join(site, "bisections.html"), encoding="utf-8").read()
    assert "step at 2.11.0 -&gt; 2.12.1: faster, time ratio 0.42 [0.41, 0.43]" in bisections
    assert 'href="bisections.html"' in index
    machines = open(os.path.join(site, "machines.html"), encoding="utf-8").read()
    assert re.search(r">alpha</th><th[^>]*>beta</th><th[^>]*>beta / alpha</th>", machines), \
        machines


@pytest.mark.parametrize("page", ["index.html", "model/gpt2.html", "bisections.html"])
def test_chromium_draws_the_page_without_console_errors(site, chromium, page, tmp_path):
    screenshot = str(tmp_path / "page.png")
    result = subprocess.run(
        [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", "--screenshot=%s" % screenshot, "--window-size=1400,1000",
         "file://" + os.path.join(site, page)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines()
              if "CONSOLE" in line and CONSOLE_ERROR.search(line)]
    assert not errors, "\n".join(errors)
    assert os.path.getsize(screenshot) > 0
    pixels = np.asarray(Image.open(screenshot).convert("L"), dtype=float)
    assert pixels.shape == (1000, 1400)
    dark = (pixels < 128).mean()  # text, lines and tables: more than a blank or near-blank page
    assert 0.002 < dark < 0.5 and pixels.std() > 10, (dark, pixels.std())


def test_publish_replaces_only_its_own_files_and_refuses_a_folder_of_others(site, tmp_path):
    store = os.path.join(os.path.dirname(site), "store")
    out = tmp_path / "site"
    publish = lambda folder, cwd=None: subprocess.run(
        [*DUEL, "publish", str(folder), "--store", store], capture_output=True,
        text=True, timeout=300, cwd=cwd)
    assert publish(out).returncode == 0
    (out / "CNAME").write_text("duel.example.org\n")
    (out / "mine").mkdir()
    (out / "mine" / "notes.txt").write_text("mine\n")
    (out / "model" / "stale.html").write_text("from an earlier site\n")
    with open(str(out / ".duel-site"), "a") as handle:
        handle.write("model/stale.html\n")
    again = publish(out)
    assert again.returncode == 0, again.stderr
    assert (out / "CNAME").read_text() == "duel.example.org\n"
    assert (out / "mine" / "notes.txt").exists() and (out / "index.html").exists()
    assert not (out / "model" / "stale.html").exists()
    assert not [name for name in os.listdir(str(out)) if "partial" in name]
    others = tmp_path / "others"
    others.mkdir()
    (others / "thesis.tex").write_text("mine\n")
    refused = publish(others)
    assert refused.returncode == 2 and str(others / "thesis.tex") in refused.stderr
    assert os.listdir(str(others)) == ["thesis.tex"]
    here = tmp_path / "here"
    here.mkdir()
    dot = publish(".", cwd=str(here))
    assert dot.returncode == 0, dot.stderr
    assert (here / "index.html").exists()
