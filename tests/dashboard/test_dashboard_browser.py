"""What a user sees of an aoe-tune study in optuna-dashboard, read in a real browser.

Two real runs into one SQLite storage: the decode study on the simulator with
its hidden failures (GetTiling refusals the rules do not know), and the cpu
study pointed at the C++ compiler, which rejects the C kernel, so a build
fails for real and its log becomes an artifact. The real dashboard server
serves them on loopback; Debian's chromium, driven by selenium, renders the
pages, and the checks read the rendered text, as a user would.
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import json5
import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from aoe_optuna.attrs import ATTR_FAILURE, ATTR_FAILURE_KIND, ATTR_INFEASIBLE
from aoe_optuna.cli.main import NOTHING_MEASURED, main
from tests.dashboard.server import dashboard_server, study_id

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = [
    pytest.mark.slow,  # two tuning runs, a dashboard server and a browser: ~25 s
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="needs Debian's chromium and chromedriver: apt-get install chromium "
               "chromium-driver",
    ),
    pytest.mark.skipif(shutil.which("g++") is None,
                       reason="needs g++ on PATH (the failing cpu build)"),
]

ROOT = Path(__file__).resolve().parents[2]
DECODE = ROOT / "studies" / "qwen25_7b_decode_910b2_hidden.json"
CPU = ROOT / "studies" / "cpu_gemm.json"
RENDER_TIMEOUT_S = 30


@dataclass
class Served:
    base: str
    driver: WebDriver
    url: str
    shots: Path

    def open(self, path: str, wait_for: str) -> str:
        """Load a page, wait until its text shows ``wait_for``, keep a screenshot; the text."""
        self.driver.get(self.base + path)
        WebDriverWait(self.driver, RENDER_TIMEOUT_S).until(
            lambda d: wait_for in d.find_element(By.TAG_NAME, "body").text,
            message=f"{path} never showed {wait_for!r}",
        )
        name = path.strip("/").replace("/", "_").replace("?", "_").replace("=", "")
        self.driver.save_screenshot(str(self.shots / f"{name}.png"))
        return self.driver.find_element(By.TAG_NAME, "body").text

    def study(self, name: str) -> optuna.Study:
        return optuna.load_study(study_name=name, storage=self.url)


def _tune(*args: str, code: int = 0) -> None:
    assert main([*args, "--sampler", "random", "--no-progress"]) == code


def _first(study: optuna.Study, match: Callable[[FrozenTrial], bool]) -> FrozenTrial:
    trials = [t for t in study.get_trials() if match(t)]
    assert trials, "the run made no such trial; pick another seed"
    return trials[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("dashboard")
    url = f"sqlite:///{tmp / 'aoe.db'}"
    _tune("--config", str(DECODE), "--storage", url, "--study-name", "decode",
          "--n-trials", "8", "--seed", "1")
    spec = json5.loads(CPU.read_text())
    spec["backend"]["compiler"] = "g++"  # a C++ compiler: the C kernel does not build
    (tmp / "cpu_gxx.json").write_text(json.dumps(spec))
    _tune("--config", str(tmp / "cpu_gxx.json"), "--storage", url, "--study-name", "gxx",
          "--n-trials", "2", "--seed", "0", code=NOTHING_MEASURED)  # no build succeeds
    options = Options()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--window-size=1400,3000"):
        options.add_argument(arg)
    shots = tmp / "screenshots"
    shots.mkdir()
    with dashboard_server(url, tmp / "aoe.db.artifacts") as base:
        driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
        try:
            yield Served(base, driver, url, shots)
        finally:
            driver.quit()


def test_study_page_shows_the_metric_our_plot_and_the_artifacts(served: Served) -> None:
    sid = study_id(served.base, "decode")
    text = served.open(f"/dashboard/studies/{sid}", "Convergence against the roofline")
    assert "y Axis\ntokens/s" in text  # the history plot's metric, not "Objective 0"
    assert "Objective 0" not in text
    roofline = served.study("decode").user_attrs["roofline_tokens_per_s"]
    assert f"roofline {roofline:,.4g}" in text  # our plot's roofline line
    assert "best so far" in text and "failed" in text  # its legend
    assert "Study Artifacts\nspec.json" in text


def test_note_page_shows_the_run_summary(served: Served) -> None:
    sid = study_id(served.base, "decode")
    text = served.open(f"/dashboard/studies/{sid}/note", "Last run:")
    assert "Last run: reached 8 measurements." in text
    assert "of roofline" in text and "Best config: tile_m=" in text


def test_failed_trial_shows_its_reason(served: Served) -> None:
    study = served.study("decode")
    failed = _first(study, lambda t: t.state == TrialState.FAIL)
    sid = study_id(served.base, "decode")
    text = served.open(f"/dashboard/studies/{sid}/trials?numbers={failed.number}",
                       f"Trial {failed.number} (trial_id=")
    detail = text[text.index(f"Trial {failed.number} (trial_id="):]
    assert detail.split("\n")[1] == "Fail"
    assert f"{ATTR_FAILURE_KIND} build" in detail
    assert f"{ATTR_FAILURE} {failed.user_attrs[ATTR_FAILURE]}" in detail


def test_failed_build_shows_the_compiler_log_as_an_artifact(served: Served) -> None:
    study = served.study("gxx")
    failed = _first(study, lambda t: t.user_attrs.get(ATTR_FAILURE_KIND) == "build")
    sid = study_id(served.base, "gxx")
    text = served.open(f"/dashboard/studies/{sid}/trials?numbers={failed.number}",
                       "build.log")
    assert text.index("Artifacts") < text.rindex("build.log")
    links = [a.get_attribute("href") for a in
             served.driver.find_elements(By.CSS_SELECTOR, "a[href*='/artifacts/']")]
    assert links, "no artifact link on the trial page"
    with urllib.request.urlopen(links[0], timeout=5) as r:
        log = r.read().decode()
    assert log.startswith("$ g++ ") and "error:" in log and "restrict" in log


def test_infeasible_proposal_shows_the_rules_it_breaks(served: Served) -> None:
    study = served.study("decode")
    pruned = _first(study, lambda t: ATTR_INFEASIBLE in t.user_attrs)
    sid = study_id(served.base, "decode")
    text = served.open(f"/dashboard/studies/{sid}/trials?numbers={pruned.number}",
                       f"Trial {pruned.number} (trial_id=")
    detail = text[text.index(f"Trial {pruned.number} (trial_id="):]
    assert detail.split("\n")[1] == "Pruned"
    assert f"{ATTR_INFEASIBLE} " in detail
    assert pruned.user_attrs[ATTR_INFEASIBLE][0] in detail
