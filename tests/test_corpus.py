"""All 741 real configurations are read in one run without a crash, and the findings stay sane."""

from __future__ import annotations

import json

from conftest import run_cli, shared_path


def test_whole_corpus_lints_in_one_run_without_traceback() -> None:
    corpus = shared_path("corpus", "files")
    result = run_cli("lint", str(corpus), "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    document = json.loads(result.stdout)
    assert document["summary"]["files"] == 741
    for finding in document["findings"]:
        assert set(finding) == {"path", "line", "code", "rule", "severity", "message", "key", "fix"}
        assert finding["severity"] in ("error", "warning", "info")


def test_corpus_secrets_are_never_printed() -> None:
    corpus = shared_path("corpus", "files")
    result = run_cli("lint", str(corpus), "--select", "secret-in-config")
    for path in corpus.iterdir():
        for line in path.read_text(encoding="latin-1").splitlines():
            name, _, value = line.partition("=")
            value = value.strip()
            secret_name = name.strip() in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "AWS_SECRET_ACCESS_KEY")
            # an ALL-CAPS value is another variable's name (a templating leftover), not a credential
            if secret_name and len(value) > 8 and not value.isupper():
                assert value not in result.stdout
