#!/usr/bin/python3
"""The web page of copsd --http-listen, used as a person uses it: a real Chromium, driven by
chromedriver through Selenium, signs in, registers a document, uploads documents and reads
the reports. Run by tests/http/page_test.cc, which writes the documents (with the project's
document writers), starts copsd with authentication on and passes:

  page_test.py --url http://127.0.0.1:PORT --key API_KEY --principal NAME --dir DIR \
      --screenshot FILE

DIR holds source.txt (registered through the page), copy.docx (copies it), clean.docx,
broken.pdf (not a PDF) and a text file named with HTML; copy.docx, clean.docx and source.txt
are also checked as one batch job. Exits 0 when every check held; prints
what failed otherwise.

  page_test.py --url http://127.0.0.1:PORT --heavy-revisions-off

checks only that the page of a copsd --heavy-revisions=false (authentication off) starts with
its heavy-revision box unticked.

  page_test.py --url http://127.0.0.1:PORT --many --dir DIR

drops every file of DIR on the page of a copsd (authentication off) that keeps fewer jobs
waiting than DIR has files: each must still be checked, none refused.
"""

import argparse
import os
import sys
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
WAIT_SECONDS = 120  # a bound for a loaded host, not a speed assertion


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def headers_of(url):
    with urllib.request.urlopen(url) as response:
        return response.headers


def wait(driver, predicate, what):
    try:
        return WebDriverWait(driver, WAIT_SECONDS, poll_frequency=0.1).until(
            lambda d: predicate(d))
    except TimeoutException:
        raise AssertionError("timed out waiting for " + what) from None


def document_item(driver, name):
    """The list item of the document named `name` once it is done or failed."""
    def finished(d):
        for item in d.find_elements(By.CSS_SELECTOR, "li.document"):
            if item.find_element(By.TAG_NAME, "h3").text == name and \
                    item.get_attribute("data-state") in ("done", "failed"):
                return item
        return None
    return wait(driver, finished, name + " to be checked")


def unlabelled_controls(driver):
    return driver.execute_script("""
        return Array.from(document.querySelectorAll('input, textarea, select, progress, button'))
          .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') &&
                       !e.getAttribute('aria-labelledby') && !(e.tagName === 'BUTTON' &&
                       e.textContent.trim()))
          .map(e => e.outerHTML.slice(0, 80));""")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", help="an owner's API key")
    parser.add_argument("--principal", help="the owner's name")
    parser.add_argument("--dir")
    parser.add_argument("--screenshot")
    parser.add_argument("--heavy-revisions-off", action="store_true",
                        help="only check that the heavy-revision box starts unticked")
    parser.add_argument("--many", action="store_true",
                        help="only check every file of --dir, dropped at once")
    args = parser.parse_args()
    if args.many and not args.dir:
        parser.error("--many needs --dir")
    if not args.heavy_revisions_off and not args.many and not (args.key and args.principal and args.dir and
                                                 args.screenshot):
        parser.error("--key, --principal, --dir and --screenshot are required")

    # The page's responses carry the policy (and nosniff) the browser enforces below.
    for path in ("/", "/app.js", "/app.css"):
        headers = headers_of(args.url + path)
        check(headers.get("Content-Security-Policy") == CSP,
              path + ": Content-Security-Policy is " + str(headers.get("Content-Security-Policy")))
        check(headers.get("X-Content-Type-Options") == "nosniff", path + ": no nosniff")

    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--window-size=1280,1700", "--lang=en"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        if args.heavy_revisions_off:
            run_with_heavy_revisions_off(driver, args)
        elif args.many:
            run_many(driver, args)
        else:
            run(driver, args)
    finally:
        driver.quit()


def run_with_heavy_revisions_off(driver, args):
    """The server was told not to look for heavy revisions: the box, ticked in the page's own
    markup, is unticked once the page has its session (the workspace shows), and the
    keyboard ticks it."""
    driver.get(args.url + "/")
    wait(driver, lambda d: d.find_element(By.ID, "workspace").is_displayed(), "the workspace")
    heavy_box = driver.find_element(By.ID, "check-heavy")
    check(not heavy_box.is_selected(), "the heavy-revision box starts ticked")
    heavy_box.send_keys(Keys.SPACE)
    check(heavy_box.is_selected(), "the heavy-revision box is not ticked by the keyboard")


def run_many(driver, args):
    """Many files dropped at once on a server that keeps fewer jobs waiting: the page keeps
    the rest in its own line and tries again when the server is busy, so every file is
    checked."""
    names = sorted(os.listdir(args.dir))
    driver.get(args.url + "/")
    wait(driver, lambda d: d.find_element(By.ID, "workspace").is_displayed(), "the workspace")
    driver.find_element(By.ID, "check-files").send_keys(
        "\n".join(os.path.join(args.dir, name) for name in names))
    driver.find_element(By.ID, "check-button").send_keys(Keys.ENTER)
    for name in names:
        item = document_item(driver, name)
        check(item.get_attribute("data-state") == "done",
              name + " was not checked: " + item.text)


def run(driver, args):
    driver.get(args.url + "/")
    # Authentication is on: the upload control is in the page but hidden until sign-in.
    upload = driver.find_element(By.CSS_SELECTOR, "input[type=file]#check-files")
    wait(driver, lambda d: d.find_element(By.ID, "sign-in").is_displayed(), "the sign-in form")
    check(not upload.is_displayed(), "the upload control shows before sign-in")
    check(not unlabelled_controls(driver), "unlabelled: %s" % unlabelled_controls(driver))

    # A wrong key is refused with the server's reason; the key field has the focus.
    key_field = driver.switch_to.active_element
    check(key_field.get_attribute("id") == "api-key", "the key field does not have the focus")
    key_field.send_keys("cops_0000000000000000_wrong", Keys.ENTER)
    wait(driver, lambda d: "not accepted" in d.find_element(By.ID, "sign-in-error").text,
         "the wrong key's error")
    check(not upload.is_displayed(), "the upload control shows after a wrong key")

    # Signing in with the keyboard alone: type the key, Enter.
    driver.switch_to.active_element.send_keys(args.key, Keys.ENTER)
    wait(driver, lambda d: upload.is_displayed(), "the upload control after signing in")
    check(driver.execute_script("return sessionStorage.getItem('cops.apiKey')") == args.key,
          "the key is not in the tab's sessionStorage")
    check(driver.execute_script("return localStorage.length") == 0, "localStorage is used")
    check(driver.find_element(By.ID, "owner").is_displayed(),
          "an owner does not see the owner's part")
    account = driver.find_element(By.ID, "account-text").text
    check(account.startswith("Signed in as " + args.principal + " (") and
          "certificate" not in account, "the account line: " + account)
    check(driver.find_element(By.ID, "sign-out").is_displayed(), "no sign-out with a key")

    # An owner registers the source into a collection through the page.
    driver.find_element(By.ID, "register-file").send_keys(args.dir + "/source.txt")
    driver.find_element(By.ID, "register-title-input").send_keys("Source <b>paper</b>")
    driver.find_element(By.ID, "register-collection").send_keys("journal", Keys.ENTER)
    wait(driver, lambda d: not d.find_element(By.ID, "register-result").text.startswith(
        "Registering"), "the registration")
    registered = driver.find_element(By.ID, "register-result").text
    check(registered.startswith("Registered as #") and
          registered.endswith('"Source <b>paper</b>" in journal.'), "registration: " + registered)

    # Four files at once: a DOCX copying the source, a clean DOCX, a file that cannot be
    # converted, and a file whose name is HTML.
    odd = "<img src=x onerror=alert(1)> name.txt"
    upload.send_keys("\n".join(args.dir + "/" + name
                               for name in ("copy.docx", "clean.docx", "broken.pdf", odd)))
    driver.find_element(By.ID, "check-button").send_keys(Keys.ENTER)

    copy = document_item(driver, "copy.docx")
    check(copy.get_attribute("data-state") == "done", "copy.docx: " + copy.text)
    check("done: VIOLATION" in copy.find_element(By.CLASS_NAME, "state").text,
          "copy.docx: no violation shown")
    sources = copy.find_element(By.CSS_SELECTOR, "table.sources")
    check('"Source <b>paper</b>" in journal' in sources.text, "copy.docx: source " + sources.text)
    check(not copy.find_elements(By.TAG_NAME, "b"), "a title was interpreted as HTML")
    # The copied passage, highlighted in its source's colour side by side with the source.
    passage = copy.find_element(By.CSS_SELECTOR, "table.sbs td.passage.tint-0")
    source_text = open(args.dir + "/source.txt", encoding="utf-8").read()
    first_words = " ".join(source_text.split()[:6])
    check(first_words in " ".join(passage.text.split()),
          "copy.docx: the highlighted passage lacks %r: %s" % (first_words, passage.text[:200]))
    check(passage.value_of_css_property("background-color") not in
          ("rgba(0, 0, 0, 0)", "transparent"), "copy.docx: the passage is not highlighted")
    registered_side = passage.find_element(By.XPATH, "following-sibling::td")
    check(first_words in " ".join(registered_side.text.split()),
          "copy.docx: the source's side lacks its text: " + registered_side.text[:200])
    swatch = sources.find_element(By.CSS_SELECTOR, ".swatch.src-0")
    check(swatch.value_of_css_property("background-color") == "rgba(255, 213, 79, 1)",
          "the first source's colour is " + swatch.value_of_css_property("background-color"))

    clean = document_item(driver, "clean.docx")
    check(clean.get_attribute("data-state") == "done", "clean.docx: " + clean.text)
    check("done: no violation" in clean.text, "clean.docx: " + clean.text)
    check("0 source(s)" in clean.text and not clean.find_elements(By.CSS_SELECTOR, "mark"),
          "clean.docx shows a source")

    broken = document_item(driver, "broken.pdf")
    check(broken.get_attribute("data-state") == "failed", "broken.pdf: " + broken.text)
    error = broken.find_element(By.CSS_SELECTOR, "[role=alert]").text
    check(error.startswith("Could not be checked: ") and "PDF" in error.upper(),
          "broken.pdf's error: " + error)

    named = document_item(driver, odd)
    check(named.find_element(By.TAG_NAME, "h3").text == odd, "the HTML file name is not shown")
    check(not driver.find_elements(By.CSS_SELECTOR, "img"), "a file name was interpreted as HTML")

    # A file dropped on the drop zone (the drop a person makes, as its event).
    driver.execute_script("""
        const files = new DataTransfer();
        files.items.add(new File([arguments[0]], 'dropped.txt', {type: 'text/plain'}));
        document.getElementById('drop-zone').dispatchEvent(
            new DragEvent('drop', {dataTransfer: files, bubbles: true, cancelable: true}));""",
                          "Words of my own come first here. " + source_text)
    dropped = document_item(driver, "dropped.txt")
    check("done: VIOLATION" in dropped.text, "dropped.txt: " + dropped.text[:300])

    # Pasted text copying the source: its text view marks the passage in the source's colour.
    paste = driver.find_element(By.ID, "paste-text")
    paste.send_keys("My own opening words about something else entirely. " + source_text)
    title = driver.find_element(By.ID, "paste-title")
    title.clear()
    title.send_keys("pasted draft")
    driver.find_element(By.ID, "check-button").send_keys(Keys.ENTER)
    pasted = document_item(driver, "pasted draft")
    check("done: VIOLATION" in pasted.text, "pasted draft: " + pasted.text[:300])
    mark = pasted.find_element(By.CSS_SELECTOR, "pre.text mark.src-0")
    check(first_words in " ".join(mark.text.split()), "the mark: " + mark.text[:200])
    check("My own opening words" not in mark.text, "the mark covers the writer's own words")
    check(mark.get_attribute("title").startswith("#"), "the mark does not name its source")

    # A programme committee's batch: three submissions as one job, compared with each other
    # (the DOCX copy shares its text with source.txt) and each checked against the registered
    # documents, as `cops compare` does; a DOCX and a text file in one batch.
    batch_box = driver.find_element(By.ID, "check-batch")
    batch_box.send_keys(Keys.SPACE)
    check(batch_box.is_selected(), "the batch box is not ticked by the keyboard")
    upload.send_keys("\n".join(args.dir + "/" + name
                               for name in ("copy.docx", "clean.docx", "source.txt")))
    driver.find_element(By.ID, "check-button").send_keys(Keys.ENTER)
    batch = document_item(driver, "Batch of 3: copy.docx, clean.docx, source.txt")
    check(batch.get_attribute("data-state") == "done", "the batch: " + batch.text[:500])
    state = batch.find_element(By.CLASS_NAME, "state").text
    check(state == "done: 1 pair(s) sharing text, 2 VIOLATION(s) against the registered "
          "documents", "the batch's state: " + state)
    formats = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in
               batch.find_elements(By.CSS_SELECTOR, "table.batch-documents tbody tr")]
    check([f[:2] for f in formats] == [["copy.docx", "docx"], ["clean.docx", "docx"],
                                       ["source.txt", "text"]], "the batch's documents: %s" % formats)
    pairs = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in
             batch.find_elements(By.CSS_SELECTOR, "table.pairs tbody tr")]
    check(len(pairs) == 1 and {pairs[0][0], pairs[0][1]} == {"copy.docx", "source.txt"},
          "the batch's pairs: %s" % pairs)
    summaries = [s.text for s in
                 batch.find_elements(By.CSS_SELECTOR, "details.batch-report > summary")]
    check(summaries == ["copy.docx: VIOLATION", "clean.docx: no violation",
                        "source.txt: VIOLATION"], "the batch's reports: %s" % summaries)
    batch_box.send_keys(Keys.SPACE)

    # The owner sees who matched the registered document. The audit trail is written a
    # moment after a check's reply, so the owner asks again until it is there.
    since = driver.find_element(By.ID, "matches-since")
    since.send_keys("1d", Keys.ENTER)

    def listed(d):
        text = d.find_element(By.ID, "matches-result").text
        if text.startswith("No checks"):
            since.send_keys(Keys.ENTER)
            return False
        return text
    wait(driver, listed, "the matches")
    matches = driver.find_element(By.ID, "matches-result").text
    check(args.principal in matches and "violation" in matches, "matches: " + matches)

    # A person's heavy rewrite of a registered text keeps too few words in a row to count as
    # passages: it is found only as a heavy revision (the box under the upload control, ticked
    # as the server looks for them by default).
    driver.find_element(By.ID, "register-file").send_keys(args.dir + "/irrigation.txt")
    for field, value in (("register-title-input", "Drip irrigation"),
                         ("register-collection", "journal")):
        driver.find_element(By.ID, field).clear()
        driver.find_element(By.ID, field).send_keys(value)
    driver.find_element(By.ID, "register-collection").send_keys(Keys.ENTER)
    wait(driver, lambda d: d.find_element(By.ID, "register-result").text.endswith(
        '"Drip irrigation" in journal.'), "the second registration")
    heavy_box = driver.find_element(By.ID, "check-heavy")
    check(heavy_box.is_selected(), "the heavy-revision box does not start ticked")
    heavy_box.send_keys(Keys.SPACE)
    check(not heavy_box.is_selected(), "the heavy-revision box is not unticked by the keyboard")
    upload.send_keys(args.dir + "/reworded.txt")
    driver.find_element(By.ID, "check-button").send_keys(Keys.ENTER)
    reworded = document_item(driver, "reworded.txt")
    check("done: no violation" in reworded.text, "reworded.txt: " + reworded.text[:300])
    heavy_box.send_keys(Keys.SPACE)
    check(heavy_box.is_selected(), "the heavy-revision box is not ticked by the keyboard")
    upload.send_keys(args.dir + "/reworded-again.txt")
    driver.find_element(By.ID, "check-button").send_keys(Keys.ENTER)
    again = document_item(driver, "reworded-again.txt")
    check("done: VIOLATION" in again.text, "reworded-again.txt: " + again.text[:300])
    decision = again.find_element(By.CSS_SELECTOR, "table.sources tbody tr td:last-child").text
    check(decision.startswith("violation: heavy revision ("), "the decision: " + decision)
    # Its evidence: the runs kept in the same order, side by side with the registered text.
    runs = again.find_elements(By.CSS_SELECTOR, "table.sbs tr[data-revision-run]")
    check(runs and all("a run kept in the same order" in r.text for r in runs),
          "the heavy revision's runs: %s" % [r.text for r in runs])
    check(any("fine mesh" in r.text for r in runs), "no run holds 'fine mesh': %s"
          % [r.text for r in runs])

    check(not unlabelled_controls(driver), "unlabelled: %s" % unlabelled_controls(driver))
    # Nothing the page did was blocked by its own policy.
    blocked = [e["message"] for e in driver.get_log("browser")
               if "Content Security Policy" in e["message"] or "Refused" in e["message"]]
    check(not blocked, "CSP violations: %s" % blocked)

    # The screenshot of docs/images/web-page.png: the list of documents, reports folded away
    # (with the keyboard) but the last one's, whose text shows the copied passage.
    for item in (copy, clean, named, dropped, batch, reworded, again):
        item.find_element(By.TAG_NAME, "summary").send_keys(Keys.ENTER)
        wait(driver, lambda d: item.find_element(By.TAG_NAME, "details").get_attribute("open")
             is None, "a report to fold")
    driver.execute_script("document.getElementById('documents-title').scrollIntoView()")
    driver.save_screenshot(args.screenshot)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print("page_test.py: FAILED: %s" % failure, file=sys.stderr)
        sys.exit(1)
    print("page_test.py: passed")
