"""A big report a page at a time (history/paging.py, history/pagedview.py): ``agent-test view REPORT.json`` past
PAGED_BYTES — or ``--paged`` — serves pages made on the real loopback server from an index of the file's results,
filters and search on the server over every result. The reports are written by agent-test's own writer; five rows
a page, so page 900 is reached with 4,600 results."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from browser import chromium, expect
from helpers import cli

from agenttest.history import server
from agenttest.history.paging import PagedReport
from agenttest.model import AssertionResult, CaseKey, CaseResult
from agenttest.reporting import write
from agenttest.verdicts.outcome import make_report

N = 4600
FAILURE = 4498  # the only failure, result 4,498 (from 1): page 900 of the input order at five a page
HOSTILE = 77  # a result whose id and output are markup and a bidirectional override


def result(i: int) -> CaseResult:
    number = i + 1
    failed = number == FAILURE
    check = AssertionResult(type="contains", passed=not failed, message="output does not contain 'refund'" if failed else "", expected="refund" if failed else "answer")
    rid, output = f"case-{number:05d}", f"answer {number}"
    if number == HOSTILE:
        rid, output = 'x"><script>alert(1)</script>', "<img src=x onerror=alert(2)> \u202edeliaf"
    return CaseResult(key=CaseKey(file="cases.jsonl", id=rid, connector="mock"), status="failed" if failed else "passed",
                      input=f"ask {number}", output=output, assertions=(check,), duration_ms=1.0, index=i)


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("paging") / "big.json"
    report = make_report([result(i) for i in range(N)], 1795953600.0, 900.0, agent_id="bot", connector="mock",
                         environment={"user_id": "u", "team_id": "t", "locale": "en-us"})
    write(report, str(path))
    return path


@pytest.fixture(scope="module")
def url(big):
    paged = PagedReport(str(big), chunk=4096)  # small chunks: results cut by a chunk's end are found whole
    paged.start_indexing()
    httpd, _ = server.start(server.Pages(paged=paged, per_page=5))
    yield server.url_of(httpd)
    httpd.shutdown()
    httpd.server_close()
    paged.close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def numbers(body: str) -> list[int]:
    return [int(part.split('"', 1)[0]) for part in body.split('data-number="')[1:]]


def passing(first: int, count: int) -> list[int]:
    """Numbers of the passing results from position ``first`` of their list (input order, the failure left out)."""
    return [n for n in range(1, N + 1) if n != FAILURE][first:first + count]


def holding(path: Path, words: list[str], status: str) -> list[int]:
    """Numbers (from 1) of the ``status`` results of the report at ``path`` each of whose ``words`` is in one of its
    values — decoded whole with json, an account apart from the pager's byte scan."""
    def values(node) -> list[str]:
        if isinstance(node, dict):
            return [v for item in node.values() for v in values(item)]
        if isinstance(node, list):
            return [v for item in node for v in values(item)]
        return [node if isinstance(node, str) else json.dumps(node)]
    results = json.loads(path.read_text())["results"]
    return [n for n, r in enumerate(results, 1)
            if r["status"] == status and all(any(w.lower() in v.lower() for v in values(r)) for w in words)]


def test_the_first_page_shows_the_summary_and_the_failure_on_page_900_first(url):
    status, body = get(url)
    assert status == 200
    assert numbers(body) == [FAILURE, 1, 2, 3, 4]  # failures first, then the input order
    assert f"case-{FAILURE:05d}" in body and "output does not contain &#x27;refund&#x27;" in body
    assert "4,600 results · page 1 of 920" in body
    cards = body[body.index('id="cards"'):body.index("</div></div>", body.index('id="cards"'))]
    assert "Results</span><b class=\"\">4,600" in cards and "Failed</span><b class=\"failed\">1" in cards
    assert "Pass rate</span><b>99.98%" in cards  # 4,599 of 4,600: it read 100.0%
    assert "a page at a time" in body


def test_a_later_page(url):
    status, body = get(url + "?page=900")
    assert status == 200 and numbers(body) == passing(900 * 5 - 5 - 1, 5) and "page 900 of 920" in body
    assert 'id="prev" href="/?page=899"' in body and 'id="next" href="/?page=901"' in body
    status, body = get(url + "?page=920")
    assert status == 200 and numbers(body) == [4596, 4597, 4598, 4599, 4600] and 'id="next"' not in body


def test_a_status_filter_across_every_page(url):
    status, body = get(url + "?status=failed")
    assert status == 200 and numbers(body) == [FAILURE] and "1 result · page 1 of 1" in body
    status, body = get(url + "?status=passed&page=919")
    assert status == 200 and numbers(body) == passing(918 * 5, 5) and "4,599 results · page 919 of 920" in body
    assert 'href="/?status=passed&amp;page=920"' in body  # the pager keeps the filter
    status, body = get(url + "?status=skipped")
    assert status == 200 and numbers(body) == [] and "0 results · page 1 of 1" in body


def test_a_search_across_every_page_any_case_never_a_key(url, big):
    status, body = get(url + "?q=ANSWER+4321")
    assert status == 200 and numbers(body) == [4321] and "1 result" in body
    status, body = get(url + "?q=refund")  # the failure's check, on page 900 of the input
    assert numbers(body) == [FAILURE]
    status, body = get(url + "?q=4321+ANSWER")  # words, in any order, as the viewer's own search takes them
    assert status == 200 and numbers(body) == [4321]
    status, body = get(url + "?q=refund+4498")  # in two fields: the check's expected text and the output
    assert numbers(body) == [FAILURE]
    status, body = get(url + "?q=refund+4497")  # one word found in a result, the other in another: no result
    assert numbers(body) == [] and "0 results" in body
    status, body = get(url + "?q=answer+45&status=passed&page=2")  # search and filter at once
    want = holding(big, ["answer", "45"], "passed")  # computed apart: every value of each decoded result
    pages = -(-len(want) // 5)
    assert status == 200 and numbers(body) == want[5:10] and f"{len(want):,} results · page 2 of {pages}" in body
    assert 450 in want and 145 in want  # "answer 145" holds both words, not the text "answer 45"
    assert 'value="answer 45"' in body and 'href="/?status=passed&amp;q=answer+45&amp;page=3"' in body
    status, body = get(url + "?q=duration_ms")  # a key's name: in every result, matched in none
    assert status == 200 and numbers(body) == [] and "0 results" in body


def test_a_result_opens_in_the_viewer(url):
    status, body = get(url + f"result/{FAILURE}")
    assert status == 200 and '"kind":"report"' in body and f'"id":"case-{FAILURE:05d}"' in body and '"links":{"all":"/"}' in body
    assert get(url + "result/1")[0] == 200 and get(url + f"result/{N}")[0] == 200
    said = f"This page holds result {FAILURE:,} of the report&#x27;s {N:,} (1 of them did not pass); its figures count them all"
    assert said in body and '"cut":{"results":4600,"kept":1,"failures":1' in body  # one of them, not a one-case run


@pytest.mark.parametrize("path, status, said", [
    ("?page=0", 400, "page &#x27;0&#x27; is not a page number"),
    ("?page=-3", 400, "page &#x27;-3&#x27; is not a page number"),
    ("?page=abc", 400, "page &#x27;abc&#x27; is not a page number"),
    ("?page=%C2%B2", 400, "is not a page number"),
    ("?page=99999999999999999999", 400, "is not a page number"),
    ("?page=921", 400, "page 921 is past the last page (920) of this list"),
    ("?status=failed&page=2", 400, "page 2 is past the last page (1)"),
    ("?status=bogus", 400, "status &#x27;bogus&#x27; is not one of failed, error, timeout, passed, skipped"),
    ("?q=" + "x" * 201, 400, "the search must be a search of at most 200 characters"),
    ("?q=a%01b", 400, "the search must be a search without control characters"),
    ("?" + "&".join(f"k{i}=1" for i in range(101)), 400, "a query of more than 100 fields"),
    ("result/abc", 400, "&#x27;abc&#x27; is not a result number"),
    ("result/0", 400, "&#x27;0&#x27; is not a result number"),
    ("result/4601", 404, "result 4601"),
    ("nothing", 404, "/nothing"),
])
def test_bad_page_numbers_and_queries_are_a_page_not_a_traceback(url, path, status, said):
    got, body = get(url + path)
    assert got == status and said in body and "Traceback" not in body
    assert get(url)[0] == 200  # still serving


def test_every_value_is_escaped(url):
    status, body = get(url + "?page=16")  # result 77: the 16th page at five a page, after the failure
    assert status == 200 and HOSTILE in numbers(body)
    assert "<script>alert(1)" not in body and "<img src=x" not in body and "\u202e" not in body
    assert "x&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in body and "&lt;img src=x onerror=alert(2)&gt; \\u202edeliaf" in body
    status, body = get(url + "?q=%3Cscript%3E")  # the search is said back escaped, and finds the result
    assert numbers(body) == [HOSTILE] and 'value="&lt;script&gt;"' in body and "<script>" not in body
    status, body = get(url + "?q=%22%3E%3Cb%3E")
    assert '"><b>' not in body


def test_the_index_is_the_same_whatever_the_chunk(big):
    whole = PagedReport(str(big))
    whole.index()
    assert len(whole.starts) == N and whole.failure is None
    for chunk in (300, 1000, 50_000):  # smaller than one result: the chunk grows until a result's first lines fit
        cut = PagedReport(str(big), chunk=chunk)
        cut.index()
        assert cut.starts == whole.starts and cut.codes == whole.codes
    assert whole.result(FAILURE - 1)["id"] == f"case-{FAILURE:05d}"
    whole.close()


def test_a_file_not_laid_out_as_agent_test_writes_it_is_read_whole(big, tmp_path):
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(json.loads(big.read_text())))
    pages = server.report_pages(str(compact), paged=True)
    assert pages.paged is None and pages.single is not None and len(pages.single.results) == N
    pages = server.report_pages(str(big), paged=True)
    assert pages.paged is not None and pages.single is None
    assert server.report_pages(str(big)).paged is None  # 2 MB: below PAGED_BYTES, read whole as before


def test_agent_test_view_pages_a_report(big, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "agenttest", "view", str(big), "--paged", "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(f"Serving {big} at http://127.0.0.1:"), line
        status, body = get(line.split(" at ")[1].split()[0])
        assert status == 200 and numbers(body)[0] == FAILURE and "page 1 of 23" in body  # 200 a page
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    result = cli("view", "--paged", cwd=tmp_path)
    assert result.exit_code == 2 and "--paged shows one report file a page at a time" in result.output and "Traceback" not in result.output
    (tmp_path / "bad.json").write_text('{\n  "summary": {,\n  "results": [],\n  "metadata": {}\n}\n')
    result = cli("view", str(tmp_path / "bad.json"), "--paged", cwd=tmp_path)
    assert result.exit_code == 2 and "bad.json:1: not valid JSON" in result.output and "Traceback" not in result.output


def test_in_chromium_the_pages_filter_search_and_open_a_result(url):
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        expect(page.locator("#cases tbody tr")).to_have_count(5)
        assert page.locator("#cases tbody tr").first.get_attribute("data-number") == str(FAILURE)
        page.click("#next")
        expect(page.locator("#shown")).to_contain_text("page 2 of 920")
        page.check("[data-chip=failed]")
        page.click("#apply")
        expect(page.locator("#cases tbody tr")).to_have_count(1)
        page.fill("#search", "answer 4599")
        page.uncheck("[data-chip=failed]")
        page.press("#search", "Enter")
        expect(page.locator("#shown")).to_contain_text("1 result")
        assert page.locator("#cases tbody tr").first.get_attribute("data-number") == "4599"
        page.click("#clear")
        page.click(f"[data-number='{FAILURE}'] a")
        expect(page.locator("#case h1")).to_contain_text(f"case-{FAILURE:05d}")
        page.click("#back")
        expect(page.locator("#cases tbody tr")).to_have_count(5)
        assert page.url == url and not errors, errors
        page.goto(url + f"result/{FAILURE}")  # one result of many: the cards are the whole report's, a banner says so
        expect(page.locator(".banner").first).to_contain_text(f"This page holds result {FAILURE:,} of the report's {N:,}")
        expect(page.locator(".card", has_text="Results")).to_contain_text("4,600")
        expect(page.locator(".card", has_text="Pass rate")).to_contain_text("99.98%")  # 4,599 of 4,600: never 100%
        expect(page.locator(".card", has_text="Shown here")).to_contain_text("1")
        assert not errors, errors


# -- the self-contained HTML report past LIMIT results: cut, and saying so ------------------------------------------


def embedded(page: str) -> dict:
    start = page.index('id="agent-test-data">') + len('id="agent-test-data">')
    return json.loads(page[start:page.index("</script>", start)])


@pytest.fixture(scope="module")
def cut_page(tmp_path_factory) -> Path:
    from agenttest.reporting import html

    results = [result(i) for i in range(html.LIMIT + 1)]  # the only failure, 4,498th, and the hostile 77th among them
    report = make_report(results, 1795953600.0, 900.0, agent_id="bot", connector="mock", output_file="big.json",
                         environment={"user_id": "u", "team_id": "t", "locale": "en-us"})
    path = tmp_path_factory.mktemp("cut") / "big.html"
    write(report, str(path))
    return path


def test_an_html_report_past_the_limit_keeps_the_summary_the_failures_and_a_first_page(cut_page):
    from agenttest.reporting import html

    page = cut_page.read_text()
    data = embedded(page)
    kept = [r["id"] for r in data["report"]["results"]]
    assert data["cut"]["results"] == html.LIMIT + 1 and data["cut"]["failures"] == 1 and data["cut"]["kept"] == len(kept) == 1 + html.OTHERS
    assert f"case-{FAILURE:05d}" in kept and kept[0] == "case-00001"  # input order; the failure past the first page is kept
    assert data["report"]["summary"]["total"] == html.LIMIT + 1 and data["report"]["summary"]["failed"] == 1  # the whole run's figures
    said = data["cut"]["said"]
    assert said.startswith("This page holds 201 of the run's 10,001 results — every failure (1) and the first 200 others")
    assert "agent-test view big.json --paged shows them a page at a time" in said
    assert '<div class="banner" id="cut">This page holds 201' in page  # without JavaScript too
    assert len(page) < 2 * 2**20


def test_a_report_at_the_limit_is_whole_and_kept_bounds_the_failures():
    from agenttest.reporting import html

    report = make_report([result(i) for i in range(FAILURE + 2)], 1795953600.0, 900.0, agent_id="bot")
    assert "cut" not in embedded(html.page_of(report, limit=FAILURE + 2)) and "cut" in embedded(html.page_of(report, limit=FAILURE + 1))
    shown, failing = html.kept(report, failures=0, others=3)
    assert [r.id for r in shown] == ["case-00001", "case-00002", "case-00003"] and failing == 1
    shown, failing = html.kept(report, failures=5, others=0)
    assert [r.id for r in shown] == [f"case-{FAILURE:05d}"]


def test_in_chromium_a_cut_report_says_so_and_counts_the_whole_run(cut_page):
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(cut_page.as_uri())
        expect(page.locator(".banner").first).to_contain_text("This page holds 201 of the run's 10,001 results")
        expect(page.locator("#cards")).to_contain_text("Results10,001")
        expect(page.locator("#cards")).to_contain_text("Shown here201")
        expect(page.locator(".card", has_text="Pass rate")).to_contain_text("99.99%")  # 10,000 of 10,001: it read 100%
        assert page.locator("#cases tbody tr").first.get_attribute("data-id") == f"case-{FAILURE:05d}" and not errors, errors


def test_a_cut_html_report_whose_json_is_not_named_says_how_to_write_one():
    """The banner names the JSON report when the run's first -o is one; else it says how to write one — never a
    command made of a word of its own sentence (it said ``agent-test view its``)."""
    from agenttest.model import RunReport
    from agenttest.reporting import html

    report = RunReport(results=(), started_at="", completed_at="", duration_ms=0.0, output_file="report.html")
    said = html.cut_text(report, [], 0)
    assert "agent-test view its" not in said and "(write one with -o report.json): agent-test view report.json --paged" in said, said
    said = html.cut_text(RunReport(results=(), started_at="", completed_at="", duration_ms=0.0, output_file="out/r.json"), [], 0)
    assert "Every result is in out/r.json: agent-test view out/r.json --paged shows them" in said, said


def test_in_chromium_a_reports_counts_separate_thousands(tmp_path):
    """The cards read '6000' and '5999' beside a console that writes 6,000 (found by a new-user trial)."""
    path = tmp_path / "r.html"
    write(make_report([result(i) for i in range(1200)], 1795953600.0, 900.0, agent_id="bot", connector="mock", environment={}), str(path))
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(path.as_uri())
        cards = page.locator("#cards")
        expect(cards).to_contain_text("Cases1,200")
        expect(cards).to_contain_text("Passed1,200")
        expect(cards).to_contain_text("1,200 cases of 1,200")
        expect(cards).to_contain_text("1,200 cases")  # the interval's note too
