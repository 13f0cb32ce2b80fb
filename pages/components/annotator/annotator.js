// The annotation widget: a window of the annotator's queue held in the browser, the next pair
// drawn in the same frame as the key press, ratings kept in an ordered list of
// unacknowledged entries (localStorage, per study and annotator) until the server
// acknowledges them.
//
// The messages are one contract, data_schemas/widget.py: the page mounts the widget with a
// WidgetBoot (who, endpoint, token, token_serial, scale, total, limits, ended); the widget
// POSTs a RatingsRequest {pending, need, back, at, mark} to the endpoint with
// "Authorization: Bearer <token>" and gets a RatingsResponse {ack, versions, refused,
// unavailable, window, window_info, mark, resume, start, complete, waiting, done, total} or
// an ApiError {error, reason, retry_after_ms}. Every limit comes from boot.limits. The states
// handed back to Streamlit are "token_wanted" (the serial of a token that stopped working:
// the page mints a new one) and, at sign-out, "signed_out" / "sign_out_cancelled" — no page
// rerun per key press.
//
// Serving order: the widget walks the queue in the order the server serves it (order_key),
// not by position. A position is a slot's identity; a 2 + 1 tiebreak slot gets a new position
// past the end but is served among the next few pairs. `order` holds the positions of one
// contiguous stretch of the queue in serving order, as the server's windows describe it.
//
// Practice round (docs/practice.md): while the server says the practice gate is closed
// (RatingsResponse.practice.open false) the widget shows practice pairs; a key sends one
// PracticeAnswer {serial, value, elapsed_ms} at once and the reply carries the feedback (the
// reference answer and the explanation), shown until the doctor presses a key again. Every
// practice string comes from boot.practice_text (PracticeText). No real pair is held or
// sent while the gate is closed; kept ratings wait until it opens.
//
// Words: the widget writes no visible word of its own. Every text (labels, hints, status,
// notices, screens, dialogs, aria labels, announcements) comes in the boot data in the
// person's language — boot.text (WidgetText), boot.practice_text (PracticeText) — with
// boot.lang and boot.dir set on the widget's root; numbers are formatted and a plural text
// picked (by its CLDR category, Intl.PluralRules) for boot.locale (class Words).
//
// Terms and every other text from the server are inserted with textContent, never as HTML.
// Terms are never written to browser storage: only the pending entries (positions, values,
// flags, comments, versions, the session each was made in).
//
// Shared computers (docs/security.md): every kept list and entry names the signed-in page
// session it was made in (boot.session). On load the widget adopts its own session's lists
// silently; lists of this annotator's earlier sessions that the server still takes
// (boot.earlier) are offered to the doctor first ("Send them" / "Discard them"); lists naming
// any other session, or none, or untouched for longer than limits.kept_ttl_ms, are deleted
// unsent. The server, in turn, takes a rating only of a slot it served to the session the
// entry names. At sign-out (boot.sign_out) the widget sends what is pending (or asks the
// doctor to discard it), deletes everything it kept in this browser, and only then reports
// "signed_out" so that the page ends the session.

const INSTANCES = new WeakMap();
// A tab's stored list is adopted by another tab of the same annotator once the tab is
// closed (pagehide) or has not touched it for this long (a live tab touches it at every
// send, and retries at least every max(backoff_ms)).
const ORPHAN_AFTER_MS = 20000;
const PREFIX = "medsim-annot:";

function $(root, sel) {
  return root.querySelector(sel);
}

function typingTarget(event) {
  const el = (event.composedPath && event.composedPath()[0]) || event.target;
  if (!el || !el.tagName) return false;
  const tag = el.tagName.toLowerCase();
  return tag === "input" || tag === "textarea" || tag === "select" || el.isContentEditable;
}

function storage(kind) {
  try {
    return kind === "local" ? window.localStorage : window.sessionStorage;
  } catch (err) {
    return null; // storage disabled: the list lives in memory only
  }
}

// ------------------------------------------------------------------ the pending queue
// The ordered list of ratings not yet acknowledged, kept in localStorage under this tab's
// key so that it survives a reload, a crash or closing the tab; a later tab of the same
// annotator in this browser adopts the lists of closed tabs and sends them.
class PendingQueue {
  constructor(who, session, earlier, ttlMs) {
    this.who = who;
    this.session = session || null;
    this.earlier = new Set(earlier || []);
    this.ttlMs = Number(ttlMs) || 0;
    this.offered = []; // [{key, entries, t}] kept lists of earlier sessions, waiting for the doctor
    this.entries = [];
    this.seq = 0;
    const tabStore = storage("session");
    const tabKey = `${PREFIX}tab:${who}`;
    this.tab = (tabStore && tabStore.getItem(tabKey)) || null;
    if (!this.tab) {
      this.tab = Math.random().toString(36).slice(2) + Date.now().toString(36);
      if (tabStore) tabStore.setItem(tabKey, this.tab);
    }
    this.key = `${PREFIX}${who}:${this.tab}`;
  }

  get size() {
    return this.entries.length;
  }

  keys() {
    const local = storage("local");
    const keys = [];
    if (!local) return keys;
    for (let i = 0; i < local.length; i++) {
      const k = local.key(i);
      if (k && k.startsWith(`${PREFIX}${this.who}:`)) keys.push(k);
    }
    return keys;
  }

  sessionOf(saved, e) {
    // The session an entry was made in (an entry of an older list: its list's).
    const s = e && typeof e.session === "string" ? e.session : saved.session;
    return typeof s === "string" && s ? s : null;
  }

  load() {
    // This session's lists (a reload of the widget) are adopted; lists of tabs that are gone
    // from this annotator's earlier sessions are offered (this.offered); any other list is
    // deleted unsent: planted, another session's, or expired.
    const local = storage("local");
    if (!local) return;
    const now = Date.now();
    const keys = this.keys();
    keys.sort((a, b) => (a === this.key ? -1 : b === this.key ? 1 : 0));
    for (const k of keys) {
      let saved;
      try {
        saved = JSON.parse(local.getItem(k));
      } catch (err) {
        saved = null;
      }
      const own = k === this.key;
      if (!own && saved && !saved.closed && now - Number(saved.t || 0) < ORPHAN_AFTER_MS) {
        continue; // another live tab's list
      }
      const fresh = saved && (!this.ttlMs || now - Number(saved.t || 0) < this.ttlMs);
      const list = fresh && Array.isArray(saved.pending) ? saved.pending : [];
      const mine = [];
      const earlier = [];
      for (const e of list) {
        const session = this.sessionOf(saved, e);
        if (!e || !session) continue;
        const entry = { ...e, session: session };
        if (session === this.session) mine.push(entry);
        else if (this.earlier.has(session)) earlier.push(entry);
      }
      this.adopt(mine);
      if (earlier.length) {
        // Kept (under their own key, closed) until the doctor answers.
        const keep = own ? `${this.key}-kept` : k;
        const t = Number(saved.t) || now;
        try {
          local.setItem(
            keep,
            JSON.stringify({ t: t, closed: true, session: earlier[0].session, pending: earlier }),
          );
        } catch (err) {
          // Storage full: offered from memory only.
        }
        this.offered.push({ key: keep, entries: earlier, t: t });
      } else if (!own) {
        local.removeItem(k);
      }
    }
    this.persist();
  }

  offeredCount() {
    return this.offered.reduce((n, kept) => n + kept.entries.length, 0);
  }

  takeOffered(send) {
    // The doctor's answer about the kept ratings of earlier sessions: send (adopt) or discard.
    const local = storage("local");
    for (const kept of this.offered) {
      if (send) this.adopt(kept.entries);
      if (local && kept.key !== this.key) local.removeItem(kept.key);
    }
    this.offered = [];
    this.persist();
  }

  clearAll() {
    // Sign-out: forget everything this annotator kept in this browser (both storages).
    this.entries = [];
    this.offered = [];
    this.cleared = true;
    const local = storage("local");
    if (local) for (const k of this.keys()) local.removeItem(k);
    const tabStore = storage("session");
    if (tabStore) tabStore.removeItem(`${PREFIX}tab:${this.who}`);
  }

  adopt(list) {
    // Renumber in order, keeping each chained edit pointing at its (renumbered) earlier one.
    const renum = new Map();
    for (const e of [...list].sort((a, b) => a.seq - b.seq)) {
      if (!e || typeof e.position !== "number") continue;
      this.seq += 1;
      renum.set(e.seq, this.seq);
      const after = e.after === null || e.after === undefined ? null : renum.get(e.after);
      this.entries.push({
        seq: this.seq,
        position: e.position,
        value: e.value,
        unclear: !!e.unclear,
        comment: typeof e.comment === "string" ? e.comment : "",
        elapsed_ms: Number(e.elapsed_ms) || 0,
        version: after ? null : e.version === undefined ? null : e.version,
        after: after || null,
        session: typeof e.session === "string" ? e.session : this.session,
      });
    }
  }

  persist(closed) {
    const local = storage("local");
    if (!local || this.cleared) return;
    try {
      if (!this.entries.length) local.removeItem(this.key);
      else
        local.setItem(
          this.key,
          JSON.stringify({
            t: Date.now(),
            closed: !!closed,
            session: this.session,
            pending: this.entries,
          }),
        );
    } catch (err) {
      // Storage full: the list still lives in memory.
    }
  }

  push(entry) {
    this.seq += 1;
    const e = { ...entry, seq: this.seq };
    this.entries.push(e);
    this.persist();
    return e;
  }

  last(position) {
    for (let i = this.entries.length - 1; i >= 0; i--) {
      if (this.entries[i].position === position) return this.entries[i];
    }
    return null;
  }

  has(position) {
    return this.entries.some((e) => e.position === position);
  }

  find(seq) {
    return this.entries.find((e) => e.seq === seq) || null;
  }

  batch(max) {
    return this.entries.slice(0, max);
  }

  stored(seq, version) {
    // seq was stored as `version`: a later edit chained onto it now names that version.
    for (const e of this.entries) {
      if (e.after === seq) {
        e.version = version;
        e.after = null;
      }
    }
  }

  drop(seq) {
    this.entries = this.entries.filter((e) => e.seq !== seq);
  }

  ackUpTo(ack) {
    const before = this.entries.length;
    this.entries = this.entries.filter((e) => e.seq > ack);
    if (this.entries.length !== before) this.persist();
  }
}

// ------------------------------------------------------------------ the screens
// The widget shows one screen at a time. SCREENS is the one place they are declared, each
// with the screens it may go to next; Annotator.go() makes every change and checks it here.
//   starting  sending kept ratings / asking where to resume (the first screen)
//   pair      a pair on screen, at `pos`
//   loading   waiting for pairs: `waitFor` says which ({kind: "next" | "back" | "resume", pos})
//   end       the queue is done, or waiting for other doctors (2 + 1 tiebreak pairs)
//   ended     the access code was replaced or revoked: nothing more is sent
//   practice  a practice pair on screen (the practice gate is closed)
//   feedback  the reference answer and explanation of the practice answer just given
// "pair" never goes straight to "end": past the last pair held, the server is asked first.
// A closed gate may arrive with any reply (an admin sent the doctor back to practice), so
// every screen but "ended" may go to "practice".
const FIRST_SCREEN = "starting";
const SCREENS = Object.freeze({
  starting: Object.freeze(["pair", "loading", "end", "ended", "practice"]),
  pair: Object.freeze(["pair", "loading", "ended", "practice"]),
  loading: Object.freeze(["pair", "loading", "end", "ended", "practice", "feedback"]),
  end: Object.freeze(["pair", "loading", "end", "ended", "practice"]),
  ended: Object.freeze(["ended"]), // a later boot saying "ended" draws the stop again
  practice: Object.freeze(["loading", "practice", "ended"]),
  feedback: Object.freeze(["practice", "pair", "loading", "end", "ended"]),
});

function fill(template, values) {
  // "{name}" fields of a PracticeText string, filled with textContent-safe values.
  return String(template).replace(/\{(\w+)\}/g, (m, k) => (k in values ? String(values[k]) : m));
}

// ------------------------------------------------------------------ the words
// The boot's texts in the person's language: say(key, values) fills a WidgetText string,
// count(key, n, values) picks a plural message's text for n by the language's CLDR plural
// category ("other" when the language sent none for it) and fills {n} with n formatted.
class Words {
  constructor(boot) {
    this.text = boot.text || {};
    this.lang = boot.lang || "en";
    this.dir = boot.dir === "rtl" ? "rtl" : "ltr";
    const locale = boot.locale || this.lang;
    try {
      this.numbers = new Intl.NumberFormat(locale);
      this.plurals = new Intl.PluralRules(locale);
      this.locale = locale;
    } catch (err) {
      this.numbers = new Intl.NumberFormat();
      this.plurals = new Intl.PluralRules();
      this.locale = undefined;
    }
  }

  num(n) {
    return this.numbers.format(Number(n));
  }

  percent(x) {
    return x === null || x === undefined ? "–" : this.num(Math.round(Number(x) * 100));
  }

  say(key, values) {
    const template = this.text[key];
    return template === undefined ? "" : fill(template, values || {});
  }

  count(key, n, values) {
    const forms = this.text[key] || {};
    const form = forms[this.plurals.select(Number(n))];
    const template = form === undefined ? forms.other : form;
    return template === undefined ? "" : fill(template, { ...(values || {}), n: this.num(n) });
  }

  // Back points the way the text runs: left in a left-to-right language, right otherwise.
  get backArrow() {
    return this.dir === "rtl" ? "→" : "←";
  }
}

// A move the table does not allow is a bug: it is always logged (console.error), and thrown
// when globalThis.MEDSIM_STRICT_SCREENS is true (set it in the browser console, or in a
// test's init script, while working on the widget).
function illegalMove(from, to) {
  const text = `medsim annotator: no move from screen "${from}" to "${to}"`;
  if (globalThis.MEDSIM_STRICT_SCREENS === true) throw new Error(text);
  console.error(text);
}

// ------------------------------------------------------------------ the widget
class Annotator {
  constructor(root) {
    this.root = root;
    this.el = {
      main: $(root, ".medsim-main"),
      pair: $(root, ".medsim-terms"),
      t1: $(root, '[data-testid="medsim-term-1"]'),
      t2: $(root, '[data-testid="medsim-term-2"]'),
      options: $(root, ".medsim-options"),
      back: $(root, ".medsim-back"),
      unclear: $(root, ".medsim-unclear"),
      comment: $(root, ".medsim-comment"),
      count: $(root, ".medsim-comment-count"),
      savedNote: $(root, ".medsim-saved-note"),
      end: $(root, ".medsim-end"),
      endText: $(root, ".medsim-end-text"),
      endBack: $(root, ".medsim-end-back"),
      wait: $(root, ".medsim-wait"),
      notice: $(root, ".medsim-notice"),
      reminder: $(root, ".medsim-reminder"),
      status: $(root, ".medsim-status"),
      announce: $(root, ".medsim-sr"),
      progress: $(root, ".medsim-progress"),
      fill: $(root, ".medsim-progress-fill"),
      progressText: $(root, ".medsim-progress-text"),
      box: $(root, ".medsim-annotator"),
      practice: $(root, ".medsim-practice"),
      practiceHeading: $(root, '[data-testid="medsim-practice-heading"]'),
      practiceIntro: $(root, ".medsim-practice-intro"),
      practiceProgress: $(root, '[data-testid="medsim-practice-progress"]'),
      feedback: $(root, ".medsim-feedback"),
      fbVerdict: $(root, '[data-testid="medsim-feedback-verdict"]'),
      fbYours: $(root, '[data-testid="medsim-feedback-yours"]'),
      fbReference: $(root, '[data-testid="medsim-feedback-reference"]'),
      fbExplanation: $(root, '[data-testid="medsim-feedback-explanation"]'),
      fbPassed: $(root, '[data-testid="medsim-feedback-passed"]'),
      fbGo: $(root, ".medsim-feedback-go"),
      kept: $(root, ".medsim-kept"),
      keptText: $(root, ".medsim-kept-text"),
      signout: $(root, ".medsim-signout"),
      signoutText: $(root, ".medsim-signout-text"),
      question: $(root, ".medsim-question"),
      commentHint: $(root, ".medsim-comment-hint"),
    };
    // A touch screen (the primary pointer is a finger) gets touch wording: no Tab key there.
    this.touch = !!(globalThis.matchMedia && globalThis.matchMedia("(pointer: coarse)").matches);
    if (this.touch) root.querySelector(".medsim-annotator").dataset.touch = "true";
    this.words = new Words({});
    // The practice round: the server's last PracticeState, the answer in flight (sent again
    // until acknowledged by its feedback) and, once the gate opened, where the real queue
    // resumes (shown after the last feedback).
    this.practice = null;
    this.practiceAnswer = null;
    this.resumeAfterPractice = null;
    // The screen, with `pos` (the position on screen, screen "pair" only) and `waitFor`
    // (screen "loading" only): set together, by go() alone.
    this.go(FIRST_SCREEN);
    // The pairs held: the server's windows merged (mergeWindow alone changes the stretch).
    this.held = {
      cache: new Map(), // position -> pair (with local answers applied)
      order: [], // positions of a contiguous stretch of the queue, in serving order
      rank: new Map(), // position -> index in order
      headKnown: false, // order starts at the first slot served
      tailKnown: false, // order ends at the last slot served
      mark: null, // the queue mark of the last window received
    };
    this.newly = new Set(); // positions first rated in this tab since baseDone was counted
    this.baseDone = 0;
    this.total = 0;
    this.waiting = 0;
    this.drawnAt = 0;
    this.ignored = 0;
    // Sending: one request in flight; presses meanwhile set `again`; errors retry on the
    // one timer with backoff; a token that stopped working waits for the page's next one.
    this.net = {
      endpoint: null,
      token: null,
      serial: undefined, // the serial of the token held
      tokenWanted: undefined, // the serial handed back to the page for a new token
      inflight: false,
      again: false,
      attempt: 0,
      unavailable: false,
      timer: null,
      paintFrame: null,
    };
    this.onKey = (e) => this.handleKey(e);
    this.onBeforeUnload = (e) => {
      if (this.queue && this.queue.size) {
        e.preventDefault();
        e.returnValue = "";
      }
    };
    this.onPageHide = () => {
      if (this.queue) this.queue.persist(true);
    };
    document.addEventListener("keydown", this.onKey);
    window.addEventListener("beforeunload", this.onBeforeUnload);
    window.addEventListener("pagehide", this.onPageHide);
    this.el.back.addEventListener("click", () => this.back());
    this.el.endBack.addEventListener("click", () => this.back());
    this.el.unclear.addEventListener("click", () => this.toggleUnclear());
    this.el.comment.addEventListener("input", () => this.commentChanged());
    this.el.comment.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.el.comment.blur();
    });
    $(root, ".medsim-kept-send").addEventListener("click", () => this.answerKept(true));
    $(root, ".medsim-kept-discard").addEventListener("click", () => this.answerKept(false));
    $(root, ".medsim-signout-stay").addEventListener("click", () => this.staySignedIn());
    $(root, ".medsim-signout-discard").addEventListener("click", () => this.finishSignOut());
  }

  // ---------------------------------------------------------------- boot data from the page
  receive(boot, setStateValue) {
    this.setStateValue = setStateValue;
    if (!boot) return;
    if (!this.worded || (boot.lang && boot.lang !== this.words.lang)) {
      // The words of the first boot (the stop screen of an ended code needs them too), and
      // again when the person changed their language.
      const again = this.worded;
      this.worded = true;
      this.limits = boot.limits;
      this.words = new Words(boot);
      if (boot.practice_text) this.text = boot.practice_text;
      this.drawWords();
      if (again && this.queue) {
        this.renderProgress();
        this.renderStatus();
        if (this.screen === "pair") this.refreshAnswer();
      }
    }
    if (boot.ended) {
      this.stop();
      return;
    }
    const newToken = boot.token && boot.token_serial !== this.net.serial;
    this.net.token = boot.token;
    this.net.serial = boot.token_serial;
    this.net.endpoint = boot.endpoint;
    if (!this.queue) {
      this.limits = boot.limits;
      this.text = boot.practice_text;
      this.scale = boot.scale;
      this.total = Number(boot.total) || 0;
      this.el.comment.maxLength = this.limits.comment_max;
      // What is asked, from the study's scale (ScaleView.question), above every pair.
      this.el.question.textContent = this.scale.question || "";
      this.el.question.hidden = !this.scale.question;
      this.buildOptions();
      this.queue = new PendingQueue(
        boot.who,
        boot.session,
        boot.earlier,
        this.limits.kept_ttl_ms,
      );
      this.queue.load();
      this.showWait(
        this.queue.size
          ? this.words.count("sending_kept", this.queue.size)
          : this.words.say("loading_pairs"),
      );
      this.renderStatus();
      if (this.queue.offered.length && !boot.sign_out) this.showKept();
      else this.kick();
    } else if (newToken && this.screen !== "ended") {
      this.net.tokenWanted = null;
      this.kick();
    }
    if (boot.sign_out) this.startSignOut();
  }

  drawWords() {
    // The widget's fixed words, its language and direction (once, from the first boot).
    const W = this.words;
    this.el.box.setAttribute("lang", W.lang);
    this.el.box.setAttribute("dir", W.dir);
    this.el.progress.setAttribute("aria-label", W.say("progress_label"));
    this.el.pair.setAttribute("aria-label", W.say("pair_label"));
    this.el.options.setAttribute("aria-label", W.say("options_label"));
    $(this.root, ".medsim-vs").textContent = W.say("versus");
    for (const a of this.root.querySelectorAll(".medsim-arrow")) a.textContent = W.backArrow;
    for (const k of this.root.querySelectorAll(".medsim-key-backspace")) {
      k.textContent = W.say("key_backspace");
    }
    $(this.root, ".medsim-back-label").textContent = W.say("back");
    $(this.root, ".medsim-end-back-label").textContent = W.say("back_to_last");
    $(this.root, ".medsim-unclear-label").textContent = W.say("unclear");
    this.el.commentHint.textContent = W.say(this.touch ? "comment_hint_touch" : "comment_hint");
    this.el.kept.setAttribute("aria-label", W.say("kept_label"));
    $(this.root, ".medsim-kept-send").textContent = W.say("kept_send");
    $(this.root, ".medsim-kept-discard").textContent = W.say("kept_discard");
    this.el.signout.setAttribute("aria-label", W.say("signout_label"));
    $(this.root, ".medsim-signout-stay").textContent = W.say("signout_stay");
    $(this.root, ".medsim-signout-discard").textContent = W.say("signout_discard");
    this.el.reminder.textContent = W.count("reminder", this.limits.straight_line_run);
  }

  // ---------------------------------------------------------------- kept ratings, sign-out
  showKept() {
    // Ratings kept in this browser from this doctor's earlier session: ask before sending.
    const n = this.queue.offeredCount();
    const when = new Date(Math.max(...this.queue.offered.map((kept) => kept.t)));
    const at = when.toLocaleString(this.words.locale, { dateStyle: "medium", timeStyle: "short" });
    this.el.keptText.textContent = this.words.count("kept_text", n, { when: at });
    this.el.kept.hidden = false;
  }

  answerKept(send) {
    if (!this.queue.offered.length) return;
    this.queue.takeOffered(send);
    this.el.kept.hidden = true;
    if (this.signingOut) {
      this.signOutStep();
      return;
    }
    this.showWait(
      this.queue.size
        ? this.words.count("sending_kept", this.queue.size)
        : this.words.say("loading_pairs"),
    );
    this.renderStatus();
    this.kick();
  }

  startSignOut() {
    // The doctor asked to sign out: send what is pending, or ask; then clear and report.
    if (this.signingOut || this.signedOut) return;
    this.signingOut = true;
    this.el.kept.hidden = true;
    this.queue.offered = []; // earlier sessions' lists: discarded with everything else
    this.el.main.hidden = true;
    this.el.end.hidden = true;
    this.el.reminder.hidden = true;
    this.el.wait.hidden = false;
    this.el.wait.textContent = this.words.say("signing_out");
    this.signOutStep();
  }

  signOutStep(failed) {
    if (!this.signingOut) return;
    if (!this.queue.size) {
      this.finishSignOut();
      return;
    }
    if (failed || this.screen === "ended") {
      this.askSignOut();
      return;
    }
    if (!this.net.inflight) {
      clearTimeout(this.net.timer);
      this.post(null, false);
    }
  }

  askSignOut() {
    const n = this.queue.size;
    this.el.wait.hidden = true;
    this.el.signoutText.textContent = this.words.count("signout_text", n);
    this.el.signout.hidden = false;
  }

  staySignedIn() {
    this.signingOut = false;
    this.el.signout.hidden = true;
    if (this.setStateValue) this.setStateValue("sign_out_cancelled", Date.now());
    if (this.screen === "pair") this.moveTo(this.pos);
    else if (this.screen === "end") this.showEnd();
    else if (this.screen === "ended") this.stop();
    else this.showWait(this.words.say("loading_pairs"));
    this.renderStatus();
    if (this.queue.size) this.retry();
  }

  finishSignOut() {
    // Everything this annotator kept in this browser goes (ratings, comments, the tab id),
    // then the page ends the session.
    this.signingOut = false;
    this.signedOut = true;
    clearTimeout(this.net.timer);
    this.queue.clearAll();
    this.el.signout.hidden = true;
    this.el.main.hidden = true;
    this.el.comment.value = "";
    this.el.wait.hidden = false;
    this.el.wait.textContent = this.words.say("signed_out");
    this.renderStatus();
    if (this.setStateValue) this.setStateValue("signed_out", Date.now());
  }

  // ---------------------------------------------------------------- sending
  need() {
    // What the request asks for: [need, back]. -1: where to resume; a position: the pairs
    // from it (back: before it); null: only acknowledge. A refill is asked for when fewer
    // than refill_below pairs are held ahead of the doctor.
    if (this.screen === "starting" || (this.waitFor && this.waitFor.kind === "resume")) {
      return [-1, false];
    }
    if (this.screen === "loading" && this.waitFor) {
      return [this.waitFor.pos, this.waitFor.kind === "back"];
    }
    if (this.screen === "end") return [this.waiting > 0 ? -1 : null, false];
    const { order, rank, tailKnown } = this.held;
    if (this.screen === "pair" && !tailKnown && order.length) {
      const k = rank.get(this.pos);
      const ahead = k === undefined ? 0 : order.length - k - 1;
      if (ahead < this.limits.refill_below) return [order[order.length - 1], false];
    }
    return [null, false];
  }

  kick() {
    // Send now (or when the request in flight is answered) if there is anything to send.
    if (this.screen === "ended" || this.net.tokenWanted || this.signedOut) return;
    if (this.queue.offered.length) return; // the doctor has not answered about kept ratings
    if (this.signingOut) {
      this.signOutStep();
      return;
    }
    if (this.net.inflight) {
      this.net.again = true;
      return;
    }
    const [need, back] = this.need();
    if (!this.queue.size && need === null && !this.practiceAnswer) return;
    if (this.practising() && !this.practiceAnswer && need === null) return;
    this.post(need, back);
  }

  kickAfterPaint() {
    // The request goes after the frame with the new pair has been painted: building and
    // sending it must not delay that frame.
    if (this.net.paintFrame) return;
    this.net.paintFrame = requestAnimationFrame(() => {
      setTimeout(() => {
        this.net.paintFrame = null;
        this.kick();
      }, 0);
    });
  }

  later(ms, fn) {
    // The one timer: a retry after an error, or the waiting screen's next question.
    clearTimeout(this.net.timer);
    this.net.timer = setTimeout(() => {
      this.net.timer = null;
      fn();
    }, ms);
  }

  async post(need, back) {
    this.net.inflight = true;
    this.net.again = false;
    clearTimeout(this.net.timer);
    this.net.timer = null;
    // While practising, kept ratings stay in the browser: the real queue is closed.
    const sent = this.practising() ? [] : this.queue.batch(this.limits.max_batch);
    this.queue.persist(); // touch: this tab is alive
    const body = JSON.stringify({
      pending: sent,
      need: need,
      back: !!back,
      at: this.screen === "pair" ? this.pos : null,
      mark: this.held.mark,
      practice: this.practiceAnswer,
      lang: this.words.lang,
    });
    let reply = null;
    let error = null;
    try {
      const res = await fetch(new URL(this.net.endpoint, window.location.origin), {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Authorization: `Bearer ${this.net.token}`,
        },
        body: body,
        cache: "no-store",
        credentials: "omit",
        signal: AbortSignal.timeout(this.limits.resend_after_ms),
      });
      const json = await res.json().catch(() => null);
      if (res.ok && json) reply = json;
      else error = json && json.error ? json : { error: "unavailable", reason: `HTTP ${res.status}` };
    } catch (err) {
      error = { error: "unavailable", reason: this.words.say("no_answer_from_server") };
    }
    this.net.inflight = false;
    if (this.destroyed || this.signedOut) return;
    if (this.signingOut) {
      if (reply) {
        this.applyAck(reply);
        this.net.unavailable = !!reply.unavailable;
      } else if (error.error === "ended") {
        this.stop();
      }
      this.signOutStep(!reply || this.net.unavailable);
      return;
    }
    if (this.screen === "ended") return;
    if (reply) this.answer(reply, need);
    else this.failed(error);
  }

  practising() {
    return !!this.practiceAnswer || !!(this.practice && !this.practice.open);
  }

  answerPractice(reply) {
    // A reply with the practice round: the practice screens while the gate is closed; the
    // last feedback (then the real queue) when this answer opened it.
    const state = reply.practice;
    const sent = this.practiceAnswer;
    const waited = this.screen === "loading" && this.waitFor && this.waitFor.kind === "practice";
    if (sent && state.feedback && state.feedback.serial === sent.serial) this.practiceAnswer = null;
    if (sent && !state.feedback) this.practiceAnswer = null; // refused as out of turn: start over
    this.practice = state;
    if (!state.open) {
      this.net.unavailable = false;
      this.net.attempt = 0;
      if (waited && state.feedback) this.showFeedback(state.feedback);
      else if (this.screen !== "feedback") this.showPractice();
      this.renderStatus();
      return;
    }
    if (waited && !state.feedback) {
      // The gate opened meanwhile (an admin unlocked the doctor): resume the real queue.
      this.go("loading", { waitFor: { kind: "resume" } });
    } else if (waited && state.feedback) {
      // This answer opened the gate: its feedback first, then the real queue.
      this.resumeAfterPractice = reply.resume
        ? { start: reply.start, complete: !!reply.complete, done: Number(reply.done) || 0 }
        : null;
      this.showFeedback(state.feedback);
    }
  }

  answer(reply, need) {
    if (reply.practice && !reply.practice.open) {
      // The gate is closed (or closed meanwhile): what was saved before is acknowledged,
      // the rest is kept; practice comes first.
      this.applyAck(reply);
      this.answerPractice(reply);
      return;
    }
    if (reply.practice) this.answerPractice(reply);
    this.net.unavailable = !!reply.unavailable;
    if (!this.net.unavailable) this.net.attempt = 0;
    this.applyAck(reply);
    if (reply.total !== null && reply.total !== undefined) this.total = Number(reply.total) || 0;
    if (reply.mark) this.held.mark = reply.mark;
    this.mergeWindow(reply.window || [], reply.window_info || {});
    if (reply.resume) this.waiting = Number(reply.waiting) || 0;
    const resuming =
      reply.resume &&
      ((this.screen === "starting" && !this.queue.size) ||
        this.screen === "end" ||
        (this.screen === "loading" && this.waitFor && this.waitFor.kind === "resume"));
    if (resuming) {
      // Kept ratings go first (screen "starting" stays until they are acknowledged).
      this.baseDone = Number(reply.done) || 0;
      this.newly.clear();
      if (reply.complete) this.showEnd();
      else this.moveTo(reply.start);
    } else if (this.screen === "loading" && this.waitFor && this.waitFor.kind === "back") {
      const at = this.waitFor.pos;
      const prev = this.prevPosition(at);
      if (prev !== undefined) this.moveTo(prev === null ? at : prev);
    } else if (
      this.screen === "loading" && this.waitFor && this.held.cache.has(this.waitFor.pos)
    ) {
      this.moveTo(this.waitFor.pos);
    } else if (this.screen === "pair") {
      this.el.back.disabled = this.prevPosition(this.pos) === null;
      this.refreshAnswer();
    }
    this.renderProgress();
    this.renderStatus();
    if (this.net.unavailable && (this.queue.size || this.need()[0] !== null)) this.retry();
    else if (this.net.again) this.kick();
    else if (this.queue.size) this.kick(); // entries beyond the batch, or pressed meanwhile
    else if (this.screen === "end" && this.waiting > 0) this.pollWaiting();
    else if (this.screen === "pair" && this.need()[0] !== null && need === null) this.kick();
  }

  failed(error) {
    if (error.error === "ended") {
      this.stop();
      return;
    }
    if (error.error === "expired" || error.error === "unauthorized") {
      // Ask the page for a new token (one page run); the next boot data carries it.
      this.net.tokenWanted = this.net.serial;
      if (this.setStateValue) this.setStateValue("token_wanted", this.net.serial);
      this.renderStatus();
      return;
    }
    this.net.unavailable = true;
    if (error.error === "invalid" || error.error === "too_large" || error.error === "problem") {
      this.notice(this.words.say("not_saved_reason", { reason: error.reason }), "refused");
    }
    this.renderStatus();
    this.retry(Number(error.retry_after_ms) || 0);
  }

  retry(atLeast) {
    const steps = this.limits.backoff_ms;
    const wait = Math.max(steps[Math.min(this.net.attempt, steps.length - 1)], atLeast || 0);
    this.net.attempt += 1;
    this.later(wait, () => this.kick());
  }

  pollWaiting() {
    // The waiting screen asks now and then whether a tiebreak pair has arrived.
    this.later(this.limits.wait_poll_ms, () => {
      if (this.screen === "end" && this.waiting > 0) this.kick();
    });
  }

  applyAck(reply) {
    const versions = reply.versions || {};
    for (const [seq, v] of Object.entries(versions)) {
      const s = Number(seq);
      this.queue.stored(s, v);
      const done = this.queue.find(s);
      if (done && !this.queue.entries.some((e) => e.position === done.position && e.seq > s)) {
        const pair = this.held.cache.get(done.position);
        if (pair) pair.version = v;
      }
    }
    for (const r of reply.refused || []) this.refused(r);
    this.queue.ackUpTo(Number(reply.ack) || 0);
  }

  refused(r) {
    const entry = this.queue.find(r.seq);
    this.queue.drop(r.seq);
    this.queue.persist();
    const later = this.queue.has(r.position);
    const pair = this.held.cache.get(r.position);
    if (r.current && pair && !later) {
      pair.rating = r.current.rating === null ? null : String(r.current.rating);
      pair.unclear = !!r.current.unclear;
      pair.comment = r.current.comment || "";
      pair.version = Number(r.current.version) || 0;
      pair.rated = pair.rating !== null;
    }
    let text;
    if (r.current) {
      const label = r.current.rating === null || r.current.rating === undefined
        ? this.words.say("no_answer")
        : this.label(String(r.current.rating));
      text = this.words.say(
        r.current.unclear ? "changed_elsewhere_unclear" : "changed_elsewhere",
        { answer: label },
      );
    } else {
      text = this.words.say("not_saved_reason", { reason: r.message });
    }
    if (entry && this.screen !== "starting" && !later) this.moveTo(r.position);
    this.notice(text, "refused");
  }

  mergeWindow(list, info) {
    // A window is the server's serving order for its stretch; what the widget held around it
    // is kept (before it, and after it when the window reaches into it), slots the window
    // no longer lists between are dropped.
    if (!list.length) return;
    for (const p of list) this.merge(p);
    const w = list.map((p) => Number(p.position));
    const inW = new Set(w);
    const i = this.held.rank.get(w[0]);
    const j = this.held.rank.get(w[w.length - 1]);
    const overlap = this.held.order.some((q) => inW.has(q));
    let prefix = [];
    let suffix = [];
    let head = !!info.start_of_queue;
    let tail = !!info.end_of_queue;
    if (overlap && i !== undefined) {
      prefix = this.held.order.slice(0, i).filter((q) => !inW.has(q));
      head = head || this.held.headKnown;
    }
    if (overlap && !tail && j !== undefined) {
      suffix = this.held.order.slice(j + 1).filter((q) => !inW.has(q));
      tail = this.held.tailKnown;
    }
    this.held.order = prefix.concat(w, suffix);
    this.held.headKnown = head;
    this.held.tailKnown = tail;
    this.held.rank = new Map(this.held.order.map((q, k) => [q, k]));
  }

  merge(p) {
    const pos = Number(p.position);
    const local = this.queue.has(pos);
    const have = this.held.cache.get(pos);
    if (have) have.index = Number(p.index) || 0;
    if (have && local) return; // the browser's own unacknowledged answer wins
    this.held.cache.set(pos, {
      position: pos,
      index: Number(p.index) || 0,
      term_1: p.term_1,
      term_2: p.term_2,
      rating: p.rating,
      unclear: !!p.unclear,
      comment: p.comment || "",
      version: Number(p.version) || 0,
      rated: p.rating !== null,
    });
  }

  // ---------------------------------------------------------------- drawing
  buildOptions() {
    const box = this.el.options;
    box.textContent = "";
    this.optionButtons = new Map();
    for (const o of this.scale.options) {
      const b = document.createElement("button");
      b.type = "button";
      b.dataset.testid = "medsim-option";
      b.dataset.value = o.value;
      b.textContent = o.label;
      b.setAttribute("aria-keyshortcuts", o.key);
      const k = document.createElement("kbd");
      k.textContent = o.key;
      k.setAttribute("aria-hidden", "true"); // the key is in aria-keyshortcuts, not the name
      b.appendChild(k);
      // No hover-only title: the descriptions are in the page's "Guidelines and scale".
      // The view time counts to the tap itself (its event time), not to when a busy page got
      // round to handling it: a double tap is refused however late its second click runs.
      b.addEventListener("click", (e) => this.rate(o.value, e.timeStamp || performance.now()));
      box.appendChild(b);
      this.optionButtons.set(o.value, b);
    }
    this.el.unclear.hidden = !this.scale.unclear_flag;
  }

  label(value) {
    const o = this.scale.options.find((x) => x.value === value);
    return o ? o.label : value;
  }

  go(next, { pos = null, waitFor = null } = {}) {
    // The one place the screen changes (see SCREENS): `pos` is kept on "pair" only,
    // `waitFor` on "loading" only.
    const allowed = this.screen === undefined ? [FIRST_SCREEN] : SCREENS[this.screen];
    if (!allowed.includes(next)) illegalMove(this.screen, next);
    this.screen = next;
    this.pos = next === "pair" ? pos : null;
    this.waitFor = next === "loading" ? waitFor : null;
    const practising = next === "practice" || next === "feedback";
    this.el.box.dataset.mode = practising ? next : "";
    this.el.practice.hidden = !practising;
    this.el.feedback.hidden = next !== "feedback";
    if (!practising) delete this.el.pair.dataset.practice;
  }

  renderPracticeProgress() {
    const state = this.practice;
    const T = this.text;
    const W = this.words;
    if (!state) return;
    let text = fill(T.progress, {
      answered: W.num(state.answered),
      exact: W.percent(state.exact),
      window: W.num(Math.min(state.answered, state.needed)),
      threshold: W.percent(state.threshold),
      needed: W.num(state.needed),
    });
    if (state.within_one !== null && state.within_one !== undefined && state.within_one !== state.exact) {
      text += fill(T.progress_within, { within: W.percent(state.within_one) });
    }
    this.el.practiceProgress.textContent = text;
  }

  showPractice() {
    // The next practice pair (the server's PracticeState.pair).
    const pair = this.practice && this.practice.pair;
    if (!pair) return;
    clearTimeout(this.net.timer);
    this.go("practice");
    this.el.end.hidden = true;
    this.el.wait.hidden = true;
    this.el.reminder.hidden = true;
    this.el.main.hidden = false;
    this.el.practiceHeading.textContent = fill(this.text.heading, {
      n: this.words.num(pair.serial + 1),
    });
    this.el.practiceIntro.textContent = this.text.intro;
    this.renderPracticeProgress();
    this.el.t1.textContent = pair.term_1;
    this.el.t2.textContent = pair.term_2;
    this.el.pair.dataset.position = "";
    this.el.pair.dataset.practice = String(pair.serial);
    for (const b of this.optionButtons.values()) b.classList.remove("medsim-current");
    this.el.savedNote.textContent = "";
    this.drawnAt = performance.now();
    this.el.pair.dataset.shownAt = String(this.drawnAt);
    this.el.announce.textContent = this.words.say("announce_practice", {
      heading: this.el.practiceHeading.textContent,
      term_1: pair.term_1,
      term_2: pair.term_2,
    });
  }

  showFeedback(fb) {
    // The reference answer and why, for the practice answer just given.
    const T = this.text;
    this.go("feedback");
    this.el.end.hidden = true;
    this.el.wait.hidden = true;
    this.el.main.hidden = false;
    this.el.t1.textContent = fb.term_1;
    this.el.t2.textContent = fb.term_2;
    this.renderPracticeProgress();
    this.el.fbVerdict.textContent = fb.exact ? T.agree : fb.within_one ? T.close : T.differ;
    this.el.feedback.dataset.exact = fb.exact ? "true" : "false";
    this.el.fbYours.textContent = fill(T.your_answer, { answer: this.label(fb.value) });
    this.el.fbReference.textContent = fill(T.reference, { answer: this.label(fb.reference) });
    this.el.fbExplanation.textContent = fb.explanation
      ? fill(T.why, { explanation: fb.explanation })
      : "";
    this.el.fbPassed.textContent = this.practice && this.practice.open ? T.passed : "";
    this.el.fbGo.textContent = T.go_on;
    this.drawnAt = performance.now();
    this.el.feedback.dataset.shownAt = String(this.drawnAt);
    this.el.announce.textContent = [
      this.el.fbVerdict.textContent,
      this.el.fbReference.textContent,
      this.el.fbExplanation.textContent,
      this.el.fbPassed.textContent,
    ].filter(Boolean).join(" ");
  }

  ratePractice(value, at) {
    const shown = at - this.drawnAt;
    if (shown < this.limits.min_view_ms) {
      this.ignore(this.words.say("ignored_too_soon", { ms: this.words.num(Math.round(shown)) }));
      return;
    }
    const pair = this.practice.pair;
    this.practiceAnswer = {
      serial: pair.serial,
      value: value,
      elapsed_ms: Math.max(0, Math.round(shown)),
    };
    this.notice("", "");
    this.go("loading", { waitFor: { kind: "practice" } });
    this.showWait(this.text.sending);
    this.kick();
  }

  leaveFeedback(at) {
    if (at - this.drawnAt < this.limits.min_view_ms) return; // a double press: read first
    this.notice("", "");
    if (!this.practice || !this.practice.open) {
      this.showPractice();
      return;
    }
    // The gate opened: on to the real queue, where the server said it resumes.
    const resume = this.resumeAfterPractice;
    this.resumeAfterPractice = null;
    if (resume) {
      this.baseDone = resume.done;
      this.newly.clear();
      if (resume.complete) this.showEnd();
      else this.moveTo(resume.start);
    } else {
      this.go("loading", { waitFor: { kind: "resume" } });
      this.showWait(this.text.loading);
      this.kick();
    }
  }

  moveTo(pos) {
    // Show the pair at `pos` (the loading screen when it is not held; the end screen for none).
    if (pos === null || pos === undefined) {
      this.showEnd();
      return;
    }
    const pair = this.held.cache.get(pos);
    if (!pair) {
      this.go("loading", { waitFor: { kind: "next", pos: pos } });
      this.showWait(this.words.say("loading_next"));
      this.kick();
      return;
    }
    this.go("pair", { pos: pos });
    if (this.net.timer && !this.net.unavailable) clearTimeout(this.net.timer);
    this.unclearNow = pair.unclear;
    this.el.end.hidden = true;
    this.el.wait.hidden = true;
    this.el.main.hidden = false;
    this.el.t1.textContent = pair.term_1;
    this.el.t2.textContent = pair.term_2;
    this.el.pair.dataset.position = String(pos);
    this.el.comment.value = pair.comment || "";
    this.el.back.disabled = this.prevPosition(pos) === null;
    this.drawnAt = performance.now();
    // When this pair was drawn, on the page's clock (the minimum view time counts from it):
    // tests wait on it before a key instead of sleeping.
    this.el.pair.dataset.shownAt = String(this.drawnAt);
    this.refreshAnswer();
    this.renderProgress();
    this.el.announce.textContent = this.words.say("announce_pair", {
      index: this.words.num(pair.index + 1),
      total: this.words.num(this.total),
      term_1: pair.term_1,
      term_2: pair.term_2,
    });
    this.kickAfterPaint();
  }

  refreshAnswer() {
    const pair = this.held.cache.get(this.pos);
    if (!pair) return;
    for (const [value, b] of this.optionButtons) {
      b.classList.toggle("medsim-current", pair.rated && pair.rating === value);
    }
    this.el.unclear.setAttribute("aria-pressed", this.unclearNow ? "true" : "false");
    this.el.savedNote.textContent = pair.rated
      ? this.words.say(pair.unclear ? "saved_answer_unclear" : "saved_answer", {
        answer: this.label(pair.rating),
      })
      : "";
    this.commentChanged();
  }

  renderProgress() {
    const done = Math.min(this.total, (this.baseDone || 0) + this.newly.size);
    const frac = this.total ? done / this.total : 0;
    this.el.fill.style.width = `${(frac * 100).toFixed(2)}%`;
    this.el.progress.setAttribute("aria-valuemax", String(this.total));
    this.el.progress.setAttribute("aria-valuenow", String(done));
    const pair = this.screen === "pair" ? this.held.cache.get(this.pos) : null;
    const W = this.words;
    const values = { done: W.num(done), total: W.num(this.total) };
    this.el.progressText.textContent = pair
      ? W.say("progress_pair", { ...values, index: W.num(pair.index + 1) })
      : W.say("progress_rated", values);
  }

  renderStatus() {
    const s = this.el.status;
    const n = this.queue ? this.queue.size : 0;
    if (this.screen === "ended") {
      s.dataset.state = "error";
      s.textContent = n ? this.words.count("not_saved", n) : this.words.say("stopped");
    } else if (n === 0) {
      s.dataset.state = "saved";
      s.textContent = this.words.say("all_saved");
    } else if (this.net.unavailable) {
      s.dataset.state = "error";
      s.textContent = this.words.count("not_saved_retry", n);
    } else {
      s.dataset.state = "saving";
      s.textContent = this.words.count("saving", n);
    }
    s.dataset.pending = String(n);
    // The status changes at every press, so it is no live region; only its turn to "not
    // saved" is announced (once, through the one live region).
    if (s.dataset.state === "error" && !this.saidError) {
      this.el.announce.textContent = s.textContent;
    }
    this.saidError = s.dataset.state === "error" ? s.textContent : null;
    if (this.screen === "end") this.renderEnd();
  }

  notice(text, kind) {
    this.el.notice.textContent = text;
    this.el.notice.dataset.kind = kind || "";
  }

  showWait(text) {
    this.el.main.hidden = true;
    this.el.end.hidden = true;
    this.el.wait.hidden = false;
    this.el.wait.textContent = text;
  }

  showEnd() {
    this.go("end");
    this.el.main.hidden = true;
    this.el.wait.hidden = true;
    this.el.end.hidden = false;
    this.el.reminder.hidden = true;
    this.renderEnd();
    this.el.announce.textContent = this.el.endText.textContent;
    this.renderProgress();
    if (this.waiting > 0 && !this.net.inflight) this.pollWaiting();
  }

  renderEnd() {
    // 2 + 1 studies: pairs others have not rated yet may still bring a tiebreak pair.
    const waiting = this.waiting || 0;
    const unsaved = this.queue.size;
    this.el.end.dataset.waiting = String(waiting);
    const W = this.words;
    this.el.endText.textContent = waiting > 0
      ? [W.count("end_waiting", waiting), unsaved ? W.say("end_waiting_unsaved") : ""]
        .filter(Boolean).join(" ")
      : unsaved
      ? W.say("end_complete_unsaved")
      : W.say("end_complete");
  }

  stop() {
    if (this.screen !== "ended") this.go("ended");
    clearTimeout(this.net.timer);
    this.el.main.hidden = true;
    this.el.end.hidden = true;
    this.el.reminder.hidden = true;
    this.el.wait.hidden = false;
    const n = this.queue ? this.queue.size : 0;
    this.el.wait.textContent = [this.words.say("ended"), n ? this.words.count("ended_kept", n) : ""]
      .filter(Boolean).join(" ");
    this.el.wait.dataset.testid = "medsim-ended";
    this.renderStatus();
    if (this.signingOut) this.askSignOut();
  }

  // ---------------------------------------------------------------- actions
  handleKey(e) {
    if (this.screen === "ended" || !this.scale || this.signingOut || this.signedOut) return;
    if (this.queue && this.queue.offered.length) return;
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (typingTarget(e)) return;
    const at = e.timeStamp || performance.now(); // the press itself, as for a tap
    if (e.key === "Backspace") {
      e.preventDefault();
      if (!e.repeat) this.back();
      return;
    }
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    const opt = this.scale.options.find((o) => o.key.toLowerCase() === key);
    if (this.screen === "practice" || this.screen === "feedback") {
      // The same keys as the real pairs: a rating key answers, and goes on after feedback.
      const onward = this.screen === "feedback" && (key === "Enter" || key === " ");
      if (!opt && !onward) return;
      e.preventDefault();
      if (e.repeat) return;
      if (this.screen === "practice") this.ratePractice(opt.value, at);
      else this.leaveFeedback(at);
      return;
    }
    if (this.screen !== "pair") {
      if (this.el.wait.hidden || !opt) return;
      e.preventDefault();
      this.ignore(this.words.say("ignored_loading"));
      return;
    }
    if (opt) {
      e.preventDefault();
      if (!e.repeat) this.rate(opt.value, at);
      return;
    }
    if (key === "u" && this.scale.unclear_flag) {
      e.preventDefault();
      if (!e.repeat) this.toggleUnclear();
    }
  }

  rate(value, at) {
    if (this.signingOut || this.signedOut) return;
    if (this.screen === "practice") {
      this.ratePractice(value, at);
      return;
    }
    if (this.screen === "feedback") {
      this.leaveFeedback(at);
      return;
    }
    if (this.screen !== "pair") return;
    const shown = at - this.drawnAt;
    if (shown < this.limits.min_view_ms) {
      this.ignore(this.words.say("ignored_too_soon", { ms: this.words.num(Math.round(shown)) }));
      return;
    }
    const pos = this.pos;
    const pair = this.held.cache.get(pos);
    const comment = this.el.comment.value.trim().slice(0, this.limits.comment_max);
    const unclear = !!this.unclearNow;
    const same =
      pair.rated && pair.rating === value && pair.unclear === unclear &&
      (pair.comment || "").trim() === comment;
    if (!same) {
      const earlier = this.queue.last(pos);
      this.queue.push({
        position: pos,
        value: value,
        unclear: unclear,
        comment: comment,
        elapsed_ms: Math.max(0, Math.round(shown)),
        version: earlier ? null : pair.version,
        after: earlier ? earlier.seq : null,
        session: this.queue.session,
      });
      if (!pair.rated) this.newly.add(pos);
      pair.rating = value;
      pair.unclear = unclear;
      pair.comment = comment;
      pair.rated = true;
    }
    this.notice("", "");
    const next = this.nextPosition(pos);
    if (next === undefined) {
      // Past the end of the window: the server says where the first unrated slot is.
      this.go("loading", { waitFor: { kind: "resume" } });
      this.showWait(this.words.say("checking_queue"));
      this.kickAfterPaint();
    } else {
      this.moveTo(next);
    }
    this.renderReminder(pos);
    this.renderStatus();
  }

  ignore(text) {
    this.ignored += 1;
    this.el.status.dataset.ignored = String(this.ignored);
    this.notice(text, "ignored");
  }

  nextPosition(pos) {
    // The first unrated slot in serving order among those held: the one after pos in the
    // ordinary walk, but a slot added since (a 2 + 1 tiebreak, served among the next few
    // pairs) before the doctor's pair comes first. undefined: nothing unrated is held and
    // the server must say (past what is held, or the end).
    for (const q of this.held.order) {
      if (q !== pos && !this.held.cache.get(q).rated) return q;
    }
    return undefined;
  }

  prevPosition(pos) {
    // The slot served just before pos; null: none (the start of the queue); undefined: not
    // held (Back asks the server).
    const k = this.held.rank.get(pos);
    if (k === undefined) return undefined;
    if (k > 0) return this.held.order[k - 1];
    return this.held.headKnown ? null : undefined;
  }

  back() {
    if (this.screen === "end") {
      if (!this.held.order.length) return;
      clearTimeout(this.net.timer);
      this.moveTo(this.held.order[this.held.order.length - 1]);
      return;
    }
    if (this.screen !== "pair") return;
    const prev = this.prevPosition(this.pos);
    if (prev === undefined) {
      // Before the stretch held: the server sends the slots served before this one.
      this.go("loading", { waitFor: { kind: "back", pos: this.pos } });
      this.showWait(this.words.say("loading_previous"));
      this.kick();
    } else if (prev !== null) {
      this.moveTo(prev);
    }
    this.el.reminder.hidden = true;
    this.notice("", "");
  }

  toggleUnclear() {
    if (this.screen !== "pair" || !this.scale.unclear_flag) return;
    this.unclearNow = !this.unclearNow;
    this.el.unclear.setAttribute("aria-pressed", this.unclearNow ? "true" : "false");
  }

  commentChanged() {
    const n = this.el.comment.value.length;
    const max = this.el.comment.maxLength;
    this.el.count.textContent = n > max * 0.8
      ? this.words.say("comment_count", { n: this.words.num(n), max: this.words.num(max) })
      : "";
  }

  renderReminder(pos) {
    const need = this.limits.straight_line_run;
    let run = 0;
    let value = null;
    const k = this.held.rank.get(pos);
    for (let m = k === undefined ? -1 : k; m >= 0 && run < need; m--) {
      const pair = this.held.cache.get(this.held.order[m]);
      if (!pair || !pair.rated) break;
      if (value === null) value = pair.rating;
      if (pair.rating !== value) break;
      run++;
    }
    this.el.reminder.hidden = run < need;
  }

  destroy() {
    this.destroyed = true;
    document.removeEventListener("keydown", this.onKey);
    window.removeEventListener("beforeunload", this.onBeforeUnload);
    window.removeEventListener("pagehide", this.onPageHide);
    if (this.net.paintFrame) cancelAnimationFrame(this.net.paintFrame);
    clearTimeout(this.net.timer);
    if (this.queue) this.queue.persist(true);
  }
}

export default function (component) {
  const { parentElement, data, setStateValue } = component;
  let inst = INSTANCES.get(parentElement);
  if (!inst || !parentElement.contains(inst.el.t1)) {
    if (inst) inst.destroy();
    inst = new Annotator(parentElement);
    INSTANCES.set(parentElement, inst);
  }
  inst.receive(data, setStateValue);
  return () => {
    inst.destroy();
    INSTANCES.delete(parentElement);
  };
}
