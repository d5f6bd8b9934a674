"""duel bisect: the search on recorded figures, the release listing on a recorded index page, a
release's era resolved with the held stack (real uv, no framework installed), and the command's
dry run and refusals. The real bisections are benchmarks (benchmarks/results/), not tests."""
import json
import os
import subprocess

import pytest

from duel.host.bisect import answer, search, stack
from duel.host.render import bisection
from duel.host.stacks import as_of, eras, releases

from conftest import DUEL, RECORD, REPO

INDEX = os.path.join(REPO, "tests", "data", "index", "tensorflow.json")
# Per-process figures (ms) as runs of BERT-base 1x128 give them on a 2-vCPU VM: three processes
# each, about 1% apart within a release.
LEVEL = {"slow": [359.2, 356.5, 363.7], "mid": [250.1, 247.9, 252.6], "fast": [150.3, 151.9,
                                                                          149.2]}
NOISY = [180.0, 330.0, 250.0]


def searched(series):
    """search.search over ``series`` (figures, or a Skip reason); the releases it measured."""
    asked = []

    def measure(index):
        asked.append(index)
        if isinstance(series[index], str):
            raise search.Skip(series[index])
        return series[index]

    return search.search(len(series), measure), asked


def steps(found):
    return [(one.kind, one.change.before, one.change.after) for one in found.findings]


@pytest.mark.unit
def test_one_step_is_found_in_few_measurements():
    series = [LEVEL["slow"]] * 6 + [LEVEL["fast"]] * 8
    found, asked = searched(series)
    assert steps(found) == [("step", 5, 6)]
    assert found.findings[0].change.ratio == pytest.approx(150.47 / 359.78, rel=1e-3)
    assert found.total.clear and len(asked) <= 2 + 4  # the ends, then one per halving


@pytest.mark.unit
def test_two_steps_are_both_followed():
    series = [LEVEL["slow"]] * 4 + [LEVEL["mid"]] * 5 + [LEVEL["fast"]] * 5
    found, _ = searched(series)
    assert steps(found) == [("step", 3, 4), ("step", 8, 9)]
    assert all(one.change.ratio < 1 for one in found.findings)


@pytest.mark.unit
def test_no_clear_change_between_the_ends_searches_nothing():
    series = [LEVEL["slow"]] * 2 + [[358.0, 361.0, 357.3]] * 10
    found, asked = searched(series)
    assert not found.total.clear and found.findings == [] and asked == [0, 11]


@pytest.mark.unit
def test_a_noisy_middle_leaves_an_unresolved_range_not_a_step():
    series = [LEVEL["slow"], NOISY, LEVEL["fast"]]
    found, _ = searched(series)
    assert steps(found) == [("unresolved", 0, 2)]
    assert "neither half" in found.findings[0].reason


@pytest.mark.unit
def test_a_release_that_cannot_be_measured_is_skipped_for_its_neighbour():
    series = [LEVEL["slow"]] * 3 + ["it will not import"] + [LEVEL["fast"]] * 4
    found, _ = searched(series)
    assert found.skipped == {3: "it will not import"}
    assert steps(found) == [("unresolved", 2, 4)]
    assert found.findings[0].reason == "no release between could be measured"


@pytest.mark.unit
def test_an_end_that_cannot_be_measured_ends_the_search():
    with pytest.raises(search.Skip, match="an end"):
        searched(["no wheel"] + [LEVEL["fast"]] * 3)


def recorded_releases():
    with open(INDEX) as handle:
        return releases.releases(json.load(handle))


@pytest.mark.unit
def test_releases_are_final_wheels_for_pythons_at_hand_with_their_day():
    listed = recorded_releases()
    versions = [one.version for one in listed]
    assert versions[:3] == ["2.0.0", "2.0.1", "2.0.2"] and "2.13.0rc0" not in versions
    first = listed[0]
    assert (first.date, first.pythons) == ("2019-09-30", ("3.7",))
    assert [one.pythons for one in listed if one.version == "2.12.0"] == [("3.11",)]
    assert [one.version for one in releases.minors(listed, "2.1", "2.12")] == [
        "2.1.4", "2.2.3", "2.3.4", "2.11.0", "2.12.1"]


@pytest.mark.unit
def test_ends_and_the_releases_between():
    listed = recorded_releases()
    assert stack.end_release("tensorflow", "2.0", listed, REPO).version == "2.0.4"
    assert stack.end_release("tensorflow", "2.0.0", listed, REPO).version == "2.0.0"
    assert stack.end_release("tensorflow", "2020-08-01", listed, REPO).version == "2.3.0"
    era = stack.end_release("tensorflow", "hf2019", listed, REPO)
    assert (era.era, era.version, era.python) == ("hf2019", "2.0.0", "3.7")
    assert [one.version for one in stack.between(listed, "2.0.0", "2.13.0")] == [
        "2.1.4", "2.2.3", "2.3.4", "2.11.0", "2.12.1"]
    with pytest.raises(as_of.AsOfError, match="no release"):
        stack.end_release("tensorflow", "2.4.9", listed, REPO)


@pytest.mark.install
def test_a_release_resolves_with_the_held_stack_and_lets_go_only_where_wheels_end(tmp_path):
    """TensorFlow 2.3 resolves with 2019's torch and transformers on Python 3.7 (its absl-py of
    that day is a source package, built by that Python); 2.12 has no Python 3.7 wheels, and
    torch 1.3 none for 3.11, so the other framework moves, transformers still held. And torch
    1.12 keeps 2019's protobuf 3.10, which TensorFlow 2.0 needs (the protobuf of 2022 breaks
    it, though TensorFlow 2.0 does not say so)."""
    from duel.host.bisect import bisection

    resolver = bisection.resolver(os.path.join(REPO, ".venv", "bin", "uv"))
    held = stack.held_of("tensorflow", os.path.join(REPO, "envs", "hf2019.txt"),
                         "2019-10-15")
    prefer = held.pop("prefer")
    assert held == {"python": "3.7", "date": "2019-10-15", "other": "torch==1.3.0",
                    "transformers": "transformers==2.1.1"}
    assert "protobuf==3.10.0" in prefer and "--hash=sha256:" in prefer
    assert "tensorflow==" not in prefer and "numpy==" not in prefer  # the bisected, the floating
    held["prefer"] = prefer
    for version, python, released, torch in (("2.3.0", "3.7", (), "1.3.0"),
                                             ("2.12.0", "3.11", ("other",), None)):
        release = [one for one in recorded_releases() if one.version == version][0]
        found_python, _, text, let_go = stack.resolve("tensorflow", release, held, resolver)
        pins = as_of.versions(text)
        assert (found_python, let_go, pins["tensorflow"], pins["transformers"]) == (
            python, released, version, "2.1.1")
        assert torch is None and pins["torch"] != "1.3.0" or pins["torch"] == torch
    torch_held = stack.held_of("pytorch", os.path.join(REPO, "envs", "hf2019.txt"), "2019-10-15")
    release = releases.Release("1.12.1", "2022-08-05", ("3.7",))
    _, _, text, _ = stack.resolve("pytorch", release, torch_held, resolver)
    pins = as_of.versions(text)
    assert (pins["torch"], pins["tensorflow"], pins["protobuf"]) == ("1.12.1", "2.0.0", "3.10.0")


@pytest.mark.unit
def test_a_bisections_registry_joins_the_checkouts(tmp_path, monkeypatch):
    registry = tmp_path / "eras.yaml"
    lock = tmp_path / "locks" / "tensorflow-2.5.3.txt"
    lock.parent.mkdir()
    lock.write_text("# requires-python: 3.7\ntensorflow==2.5.3\n")
    registry.write_text("eras:\n  tensorflow-2.5.3:\n    date: 2022-02-02\n    python: \"3.7\"\n"
                        "    locks: {cpu: %s}\n" % lock)
    monkeypatch.setenv(eras.MORE_ERAS_ENV, str(registry))
    known = eras.registry(REPO)
    assert list(known)[:2] == ["hf2019", "hf2021"] and "tensorflow-2.5.3" in known
    assert list(known).index("tensorflow-2.5.3") == list(known).index("hf2021") + 1
    assert eras.lock_file(REPO, "tensorflow-2.5.3", "cpu") == str(lock)
    monkeypatch.setenv(eras.MORE_ERAS_ENV, str(tmp_path / "gone.yaml"))
    with pytest.raises(eras.EraError, match="gone.yaml"):
        eras.registry(REPO)





@pytest.mark.unit
def test_the_answer_names_the_step_and_what_moved_with_it(tmp_path):
    said = bisection.lines(RECORD)
    assert said[2] == ("  step at 2.11.0 -> 2.12.1: faster, time ratio 0.42 [0.41, 0.43]; "
                       "python moved too, and these runs cannot tell them from the release")
    assert "    with it: build onednn: false -> true" in said
    before, after = RECORD["releases"]
    assert answer.coincides(before, after) == ["build onednn: False -> True",
                                               "python: 3.7 -> 3.11"]
    answer.write(RECORD, str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["bisect.csv", "bisect.json", "bisect.png"]


@pytest.mark.install
def test_bad_ends_are_refused_in_one_line():
    for ends, words in ((["--from", "2.13", "--to", "2.0"], "range"),
                        (["--from", "hf2019", "--to", "9.9"], "no release")):
        answer_ = subprocess.run(DUEL + ["bisect", "bert-base-cased/tensorflow/function/1x128",
                                  "--dry-run"] + ends, capture_output=True, text=True)
        assert answer_.returncode == 2, answer_.stderr
        assert len(answer_.stderr.splitlines()) == 1 and words in answer_.stderr


@pytest.mark.unit
def test_the_other_framework_moves_to_its_nearest_release_with_wheels_before_it_is_let_go():
    others = [releases.Release("1.3.0", "2019-10-10", ("3.6", "3.7")),
              releases.Release("1.13.0", "2022-10-28", ("3.7", "3.11")),
              releases.Release("2.0.0", "2023-03-15", ("3.11",))]
    held = {"python": "3.7", "date": "2019-10-15", "other": "torch==1.3.0",
            "transformers": "transformers==2.1.1"}
    release = releases.Release("2.12.0", "2023-03-22", ("3.11",))
    tried = list(stack.candidates("tensorflow", release, held, "3.11", others, "2023-03-22"))
    assert tried == [
        (["tensorflow==2.12.0", "torch==1.3.0", "transformers==2.1.1"], ()),
        (["tensorflow==2.12.0", "torch==1.13.0", "transformers==2.1.1"], ("other",)),
        (["tensorflow==2.12.0", "torch==1.13.0"], ("other", "transformers")),
        (["tensorflow==2.12.0", "transformers==2.1.1"], ("other",)),
        (["tensorflow==2.12.0"], ("other", "transformers"))]
    assert stack.nearest("torch==1.3.0", others, "3.11", "2022-01-01") is None  # not out yet


@pytest.mark.unit
def test_a_short_disk_removes_the_least_recently_used_bisection_environments(tmp_path):
    envs = tmp_path / "envs"
    for age, era in enumerate(["tensorflow-2.5.3", "tensorflow-2.9.3", "hf2019"]):
        prefix = envs / era / "cpu" / "0123456789ab"
        prefix.mkdir(parents=True)
        stack.touch(str(prefix))
        os.utime(str(prefix / stack.USED), (1000 + age, 1000 + age))
    keep = str(envs / "tensorflow-2.9.3" / "cpu" / "0123456789ab")
    assert stack.made_eras(str(envs)) == ["tensorflow-2.5.3", "tensorflow-2.9.3"]
    said = []
    stack.make_room(str(envs), 0, keep, ["tensorflow-2.5.3", "tensorflow-2.9.3"], said.append)
    assert said == []  # room enough: nothing removed
    stack.make_room(str(envs), 1 << 62, keep, ["tensorflow-2.5.3", "tensorflow-2.9.3"],
                    said.append)
    assert len(said) == 1 and "tensorflow-2.5.3" in said[0]  # neither the kept nor an era's
    assert sorted(os.listdir(str(envs))) == ["hf2019", "tensorflow-2.5.3", "tensorflow-2.9.3"]
    assert not (envs / "tensorflow-2.5.3" / "cpu" / "0123456789ab").exists()
    assert os.path.exists(keep) and (envs / "hf2019" / "cpu" / "0123456789ab").exists()


@pytest.mark.unit
def test_duel_show_prints_a_bisections_answer_from_its_folder(tmp_path, capsys):
    from duel.host.cli import main as duel

    answer.write(RECORD, str(tmp_path))
    assert duel.main(["show", str(tmp_path)]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said == bisection.lines(RECORD)
    assert said[0] == "tensorflow function bert-base-cased/1x128 duel on vm: 2.11.0 -> 2.12.1"


@pytest.mark.unit
def test_a_release_measured_before_is_found_in_the_store_by_its_era_lock_and_machine(tmp_path):
    """What lets an interrupted bisection resume: a real store of one release's run (three
    processes of one cell), found by era, lock hash and machine, and not for another machine,
    another lock or a run older than a remeasuring."""
    from conftest import POINTS, cell_rows
    from duel.cell import shard
    from duel.host.bisect import measure
    from duel.host.store import ingest, questions

    lock = tmp_path / "tensorflow-2.9.3.txt"
    lock.write_text("# requires-python: 3.7\ntensorflow==2.9.3\n")
    results = tmp_path / "run" / "results"
    for replicate, scale in ((1, 1.0), (2, 1.02), (3, 0.99)):
        rows = cell_rows("tensorflow", "function", "bert", "duel", scale)
        for row in rows:
            row.update(era="tensorflow-2.9.3", replicate=replicate,
                       started_at="2026-12-06T08:00:00+00:00", framework_build='{"onednn": true}',
                       lock_sha256=eras.lock_sha256(str(lock)))
        shard.write_shard(rows, str(results / "shards" / ("r%d.parquet" % replicate)))
    store = str(tmp_path / "store")
    ingest.add_folder(store, str(results), "vm1", create=True)
    batch, length = POINTS[0]
    point = questions.Point("bert", "tensorflow", "function", batch, length)
    run_id, rows = measure.stored(store, point, "tensorflow-2.9.3", str(lock), "vm1")
    assert len(measure.figures(rows)) == 3 and measure.builds(rows) == {"onednn": True}
    assert measure.stored(store, point, "tensorflow-2.9.3", str(lock), "vm2") is None
    assert measure.stored(store, point, "tensorflow-2.9.3", str(lock), "vm1",
                          since="2099-01-01T00:00:00+00:00") is None
    lock.write_text("# requires-python: 3.7\ntensorflow==2.9.2\n")
    assert measure.stored(store, point, "tensorflow-2.9.3", str(lock), "vm1") is None
    assert measure.stored(str(tmp_path / "none"), point, "tensorflow-2.9.3", str(lock),
                          "vm1") is None
