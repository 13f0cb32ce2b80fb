// The annotation widget: a window of the annotator's queue held in the browser,
// the next pair drawn in the same frame as the key press, ratings kept in an ordered list of
// unacknowledged entries (sessionStorage) until the server acknowledges them.
//
// Data from Python (pages/annotate.py): who (opaque storage name), scale, min_view_ms,
// comment_max, total, done, start, complete, waiting, wait_poll_ms, window (pairs in serving
// order: position, index, term_1, term_2, rating, unclear, comment, version), window_info
// (start_of_queue, end_of_queue), reply_to, ack, versions, refused, unavailable, ended.
// State to Python: "outbox" = {epoch, pending, need, back, at, sent}.
//
// Serving order: the widget walks the queue in the order the server serves it (order_key),
// not by position. A position is a slot's identity; a 2 + 1 tiebreak slot gets a new position
// past the end but is served among the next few pairs. `order` holds the positions of one
// contiguous stretch of the queue in serving order, as the server's windows describe it.
//
// Terms and every other text from the server are inserted with textContent, never as HTML.

const INSTANCES = new WeakMap();
const RESEND_AFTER_MS = 4000;
const BACKOFF_MS = [1000, 2000, 4000, 8000, 15000];
const REMINDER_RUN = 10;
const REFILL_BELOW = 20; // pairs held ahead of the doctor before more are asked for

function $(root, sel) {
  return root.querySelector(sel);
}

function typingTarget(event) {
  const el = (event.composedPath && event.composedPath()[0]) || event.target;
  if (!el || !el.tagName) return false;
  const tag = el.tagName.toLowerCase();
  return tag === "input" || tag === "textarea" || tag === "select" || el.isContentEditable;
}

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
    };
    this.cache = new Map(); // position -> pair (with local answers applied)
    this.order = []; // positions of a contiguous stretch of the queue, in serving order
    this.rank = new Map(); // position -> index in this.order
    this.headKnown = false; // this.order starts at the first slot served
    this.tailKnown = false; // this.order ends at the last slot served
    this.wantBack = null; // Back was pressed at this position; the pairs before it are loading
    this.checking = false; // waiting for the server to say where the first unrated slot is
    this.newly = new Set(); // positions first rated in this tab since baseDone was counted
    this.pending = [];
    this.seq = 0;
    this.acked = 0;
    this.pos = null; // position on screen; null: waiting or end screen
    this.want = null; // position the widget waits for (not yet in the window)
    this.drawnAt = 0;
    this.sent = 0;
    this.attempt = 0;
    this.lastReply = -1;
    this.started = false;
    this.ended = null;
    this.unavailable = false;
    this.complete = false;
    this.ignored = 0;
    this.timer = null;
    this.onKey = (e) => this.handleKey(e);
    document.addEventListener("keydown", this.onKey);
    this.el.back.addEventListener("click", () => this.back());
    this.el.endBack.addEventListener("click", () => this.back());
    this.el.unclear.addEventListener("click", () => this.toggleUnclear());
    this.el.comment.addEventListener("input", () => this.commentChanged());
    this.el.comment.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.el.comment.blur();
    });
  }

  // ---------------------------------------------------------------- storage
  storageKey() {
    return `medsim-annot:${this.who}`;
  }

  load() {
    try {
      const raw = sessionStorage.getItem(this.storageKey());
      if (raw) {
        const saved = JSON.parse(raw);
        this.pending = Array.isArray(saved.pending) ? saved.pending : [];
        this.seq = Number(saved.seq) || 0;
        this.epoch = typeof saved.epoch === "string" ? saved.epoch : null;
      }
    } catch (err) {
      this.pending = [];
    }
    // Sequence numbers count within an epoch; a tab without storage starts a new epoch, so
    // the server never mistakes a restarted count for ratings it has acknowledged.
    if (!this.epoch) {
      this.epoch = Math.random().toString(36).slice(2) + Date.now().toString(36);
      this.seq = 0;
    }
  }

  persist() {
    try {
      sessionStorage.setItem(
        this.storageKey(),
        JSON.stringify({ epoch: this.epoch, seq: this.seq, pending: this.pending }),
      );
    } catch (err) {
      // Storage full or disabled: the list still lives in memory and in component state.
    }
  }

  // ---------------------------------------------------------------- server data
  receive(data, setStateValue) {
    this.setStateValue = setStateValue;
    if (!data) return;
    if (!this.who) {
      this.who = data.who;
      this.scale = data.scale;
      this.minView = Number(data.min_view_ms) || 0;
      this.el.comment.maxLength = Number(data.comment_max) || 2000;
      this.buildOptions();
      this.load();
      if (this.pending.length) {
        this.acked = 0;
        this.showWait(`Sending ${this.pending.length} rating(s) kept from before…`);
        this.send(-1);
      }
    }
    this.total = Number(data.total) || 0;
    this.pollMs = Number(data.wait_poll_ms) || 0;
    if ("waiting" in data) this.waiting = Number(data.waiting) || 0;
    if (this.baseDone === undefined) this.baseDone = Number(data.done) || 0;
    this.unavailable = !!data.unavailable;
    if (data.ended) {
      this.stop(data.ended);
      return;
    }
    const fresh = data.reply_to !== this.lastReply;
    this.lastReply = data.reply_to;
    if (fresh) this.applyAck(data);
    this.mergeWindow(data.window || [], data.window_info || {});
    if (fresh && data.resume) this.checking = false;
    if (!this.started) {
      if (this.pending.length) {
        this.renderStatus();
        if (this.unavailable) this.scheduleRetry();
        return; // resend first, show new pairs after
      }
      this.started = true;
      this.hideWait();
      this.baseDone = Number(data.done) || 0;
      this.newly.clear();
      if (data.complete) this.showEnd();
      else this.go(data.start);
    } else if (fresh && data.resume) {
      this.baseDone = Number(data.done) || 0;
      this.newly.clear();
      if (data.complete) this.showEnd();
      else this.go(data.start);
    } else if (this.pos === null && this.wantBack !== null) {
      const prev = this.prevPosition(this.wantBack);
      if (prev !== undefined) {
        const at = this.wantBack;
        this.wantBack = null;
        this.go(prev === null ? at : prev);
      }
    } else if (this.pos === null && this.want !== null && this.cache.has(this.want)) {
      this.go(this.want);
    } else if (this.pos !== null) {
      this.el.back.disabled = this.prevPosition(this.pos) === null;
      this.refreshAnswer();
    }
    this.renderProgress();
    this.renderStatus();
    if (this.unavailable && this.pending.length) this.scheduleRetry();
  }

  applyAck(data) {
    const versions = data.versions || {};
    for (const [seq, v] of Object.entries(versions)) {
      const s = Number(seq);
      for (const e of this.pending) {
        if (e.after === s) {
          e.version = v;
          e.after = null;
        }
      }
      const done = this.pending.find((e) => e.seq === s);
      if (done && !this.pending.some((e) => e.position === done.position && e.seq > s)) {
        const pair = this.cache.get(done.position);
        if (pair) pair.version = v;
      }
    }
    for (const r of data.refused || []) this.refused(r);
    const ack = Number(data.ack) || 0;
    if (ack > this.acked) this.acked = ack;
    const before = this.pending.length;
    this.pending = this.pending.filter((e) => e.seq > this.acked);
    if (this.pending.length !== before) this.persist();
    if (!this.unavailable) this.attempt = 0;
    if (!this.started && this.pending.length === 0) this.hideWait();
  }

  refused(r) {
    const entry = this.pending.find((e) => e.seq === r.seq);
    this.pending = this.pending.filter((e) => e.seq !== r.seq);
    this.persist();
    const later = this.pending.some((e) => e.position === r.position);
    const pair = this.cache.get(r.position);
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
        ? "no answer"
        : this.label(String(r.current.rating));
      text = `This pair was changed in another window — here is the current answer: ${label}` +
        (r.current.unclear ? " (unclear meaning)" : "") + ". Your key press was not saved.";
    } else {
      text = `Not saved: ${r.message}`;
    }
    if (entry && this.started && !later) this.go(r.position);
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
    const i = this.rank.get(w[0]);
    const j = this.rank.get(w[w.length - 1]);
    const overlap = this.order.some((q) => inW.has(q));
    let prefix = [];
    let suffix = [];
    let head = !!info.start_of_queue;
    let tail = !!info.end_of_queue;
    if (overlap && i !== undefined) {
      prefix = this.order.slice(0, i).filter((q) => !inW.has(q));
      head = head || this.headKnown;
    }
    if (overlap && !tail && j !== undefined) {
      suffix = this.order.slice(j + 1).filter((q) => !inW.has(q));
      tail = this.tailKnown;
    }
    this.order = prefix.concat(w, suffix);
    this.headKnown = head;
    this.tailKnown = tail;
    this.rank = new Map(this.order.map((q, k) => [q, k]));
  }

  merge(p) {
    const pos = Number(p.position);
    const local = this.pending.some((e) => e.position === pos);
    const have = this.cache.get(pos);
    if (have) have.index = Number(p.index) || 0;
    if (have && local) return; // the browser's own unacknowledged answer wins
    this.cache.set(pos, {
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

  // ---------------------------------------------------------------- sending
  send(need, back) {
    // need: the position from which the browser needs pairs in serving order (with back:
    // the pairs served before it; null: its window suffices; -1: where to resume, i.e. the
    // first unrated slot). at: the pair on screen, from which the server resends the
    // window when the queue has grown.
    this.sent += 1;
    if (need === -1) this.checking = true;
    if (this.setStateValue) {
      this.setStateValue("outbox", {
        epoch: this.epoch,
        pending: this.pending.slice(0, 500),
        need: need,
        back: !!back,
        at: this.pos,
        sent: this.sent,
      });
    }
    this.armResend();
  }

  resendNeed() {
    if (this.checking) return [-1, false];
    if (this.wantBack !== null) return [this.wantBack, true];
    return [this.want, false];
  }

  armResend() {
    clearTimeout(this.resendTimer);
    if (!this.pending.length || this.ended) return;
    this.resendTimer = setTimeout(() => {
      if (this.pending.length && !this.ended) {
        this.attempt += 1;
        this.send(...this.resendNeed());
      }
    }, RESEND_AFTER_MS);
  }

  scheduleRetry() {
    clearTimeout(this.timer);
    const wait = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
    this.timer = setTimeout(() => {
      this.attempt += 1;
      this.send(...this.resendNeed());
    }, wait);
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
      const k = document.createElement("kbd");
      k.textContent = o.key;
      b.appendChild(k);
      if (o.description) b.title = o.description;
      b.addEventListener("click", () => this.rate(o.value, performance.now()));
      box.appendChild(b);
      this.optionButtons.set(o.value, b);
    }
    this.el.unclear.hidden = !this.scale.unclear_flag;
  }

  label(value) {
    const o = this.scale.options.find((x) => x.value === value);
    return o ? o.label : value;
  }

  go(pos, mustSend) {
    if (pos === null || pos === undefined) {
      this.showEnd();
      return;
    }
    const pair = this.cache.get(pos);
    if (!pair) {
      this.pos = null;
      this.want = pos;
      this.showWait("Loading the next pair…");
      this.send(pos);
      return;
    }
    this.want = null;
    this.wantBack = null;
    this.checking = false;
    clearTimeout(this.pollTimer);
    this.pos = pos;
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
    this.refreshAnswer();
    this.renderProgress();
    this.el.announce.textContent = `Pair ${pair.index + 1} of ${this.total}: ${pair.term_1} versus ${pair.term_2}`;
    this.maybeRefill(mustSend);
  }

  refreshAnswer() {
    const pair = this.cache.get(this.pos);
    if (!pair) return;
    for (const [value, b] of this.optionButtons) {
      b.classList.toggle("medsim-current", pair.rated && pair.rating === value);
    }
    this.el.unclear.setAttribute("aria-pressed", this.unclearNow ? "true" : "false");
    this.el.savedNote.textContent = pair.rated
      ? `Saved answer: ${this.label(pair.rating)}${pair.unclear ? " · unclear meaning" : ""}. Press a key to change it.`
      : "";
    this.commentChanged();
  }

  renderProgress() {
    const done = Math.min(this.total, (this.baseDone || 0) + this.newly.size);
    const frac = this.total ? done / this.total : 0;
    this.el.fill.style.width = `${(frac * 100).toFixed(2)}%`;
    this.el.progress.setAttribute("aria-valuemax", String(this.total));
    this.el.progress.setAttribute("aria-valuenow", String(done));
    const pair = this.pos === null ? null : this.cache.get(this.pos);
    this.el.progressText.textContent = pair
      ? `${done} / ${this.total} rated · pair ${pair.index + 1} of ${this.total}`
      : `${done} / ${this.total} rated`;
  }

  renderStatus() {
    const s = this.el.status;
    const n = this.pending.length;
    if (this.ended) {
      s.dataset.state = "error";
      s.textContent = n ? `${n} not saved` : "Stopped";
    } else if (n === 0) {
      s.dataset.state = "saved";
      s.textContent = "All saved";
    } else if (this.unavailable) {
      s.dataset.state = "error";
      s.textContent = `${n} not saved — will retry`;
    } else {
      s.dataset.state = "saving";
      s.textContent = `${n} saving…`;
    }
    s.dataset.pending = String(n);
    if (this.complete && this.el.end.hidden === false) this.showEnd();
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

  hideWait() {
    this.el.wait.hidden = true;
  }

  showEnd() {
    this.pos = null;
    this.want = null;
    this.complete = true;
    this.el.main.hidden = true;
    this.el.wait.hidden = true;
    this.el.end.hidden = false;
    this.el.reminder.hidden = true;
    // 2 + 1 studies: pairs others have not rated yet may still bring a tiebreak pair.
    const waiting = this.waiting || 0;
    this.el.end.dataset.waiting = String(waiting);
    this.el.endText.textContent = waiting > 0
      ? `Waiting for other doctors — come back later: ${waiting} pair(s) may still need your rating.` +
        (this.pending.length ? " Your last ratings are still being saved; keep this tab open until the status says “All saved”." : "")
      : this.pending.length
      ? "Your queue is complete — your last ratings are still being saved; keep this tab open until the status says “All saved”."
      : "Your queue is complete — thank you! Every rating is saved. You can close this tab.";
    this.el.announce.textContent = this.el.endText.textContent;
    this.renderProgress();
    // Ask again now and then whether a tiebreak pair has arrived (the end screen turns into it).
    clearTimeout(this.pollTimer);
    if (waiting > 0 && this.pollMs > 0 && !this.ended) {
      this.pollTimer = setTimeout(() => {
        if (this.pos === null && this.complete && !this.ended) this.send(-1);
      }, this.pollMs);
    }
  }

  stop(message) {
    this.ended = message;
    clearTimeout(this.timer);
    clearTimeout(this.pollTimer);
    clearTimeout(this.resendTimer);
    this.pos = null;
    this.el.main.hidden = true;
    this.el.end.hidden = true;
    this.el.reminder.hidden = true;
    this.el.wait.hidden = false;
    const kept = this.pending.length
      ? ` ${this.pending.length} rating(s) were not saved; they are kept in this tab and sent after you sign in again.`
      : "";
    this.el.wait.textContent =
      "Your access code was replaced or revoked, so this session has stopped. " +
      "Sign in again with your current code, or ask the study admin." + kept;
    this.el.wait.dataset.testid = "medsim-ended";
    this.renderStatus();
  }

  // ---------------------------------------------------------------- actions
  handleKey(e) {
    if (this.ended || e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    if (typingTarget(e)) return;
    const at = performance.now();
    if (e.key === "Backspace") {
      e.preventDefault();
      if (!e.repeat) this.back();
      return;
    }
    const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    if (this.pos === null) {
      if (this.el.wait.hidden || !this.scale.options.some((o) => o.key.toLowerCase() === key)) return;
      e.preventDefault();
      this.ignore("Key ignored: the next pair is still loading. Press again when it appears.");
      return;
    }
    const opt = this.scale.options.find((o) => o.key.toLowerCase() === key);
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
    if (this.pos === null || this.ended) return;
    const shown = at - this.drawnAt;
    if (shown < this.minView) {
      this.ignore(
        `Key ignored: this pair had been on screen for only ${Math.round(shown)} ms. ` +
          "Look at it and press again.",
      );
      return;
    }
    const pos = this.pos;
    const pair = this.cache.get(pos);
    const comment = this.el.comment.value.trim().slice(0, this.el.comment.maxLength);
    const unclear = !!this.unclearNow;
    const same =
      pair.rated && pair.rating === value && pair.unclear === unclear &&
      (pair.comment || "").trim() === comment;
    if (!same) {
      const earlier = [...this.pending].reverse().find((e) => e.position === pos);
      this.seq += 1;
      this.pending.push({
        seq: this.seq,
        position: pos,
        value: value,
        unclear: unclear,
        comment: comment,
        elapsed_ms: Math.max(0, Math.round(shown)),
        version: earlier ? null : pair.version,
        after: earlier ? earlier.seq : null,
      });
      if (!pair.rated) this.newly.add(pos);
      pair.rating = value;
      pair.unclear = unclear;
      pair.comment = comment;
      pair.rated = true;
      this.persist();
    }
    this.notice("", "");
    const next = this.nextPosition(pos);
    if (next === undefined) {
      // Past the end of the window: the server says where the first unrated slot is.
      this.showWait("Checking your queue…");
      this.pos = null;
      this.send(-1);
    } else {
      this.go(next, !same);
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
    for (const q of this.order) {
      if (q !== pos && !this.cache.get(q).rated) return q;
    }
    return undefined;
  }

  prevPosition(pos) {
    // The slot served just before pos; null: none (the start of the queue); undefined: not
    // held (Back asks the server).
    const k = this.rank.get(pos);
    if (k === undefined) return undefined;
    if (k > 0) return this.order[k - 1];
    return this.headKnown ? null : undefined;
  }

  maybeRefill(mustSend) {
    // Ask for the slots served after the last one held when fewer than REFILL_BELOW are held
    // ahead of the doctor. The message goes after the frame with the new pair has been
    // painted: handing state to Streamlit does work on the page's main thread that must not
    // delay that frame.
    const k = this.rank.get(this.pos);
    const ahead = k === undefined ? 0 : this.order.length - k - 1;
    const need =
      !this.tailKnown && ahead < REFILL_BELOW && this.order.length
        ? this.order[this.order.length - 1]
        : null;
    if (need === null && !mustSend) return;
    this.sendAfterPaint(need);
  }

  sendAfterPaint(need) {
    if (this.paintTimer) {
      this.queuedNeed = this.queuedNeed ?? need;
      return;
    }
    this.queuedNeed = need;
    this.paintTimer = requestAnimationFrame(() => {
      setTimeout(() => {
        this.paintTimer = null;
        const n = this.queuedNeed;
        this.queuedNeed = null;
        this.send(n);
      }, 0);
    });
  }

  back() {
    if (this.ended) return;
    if (this.pos === null) {
      if (this.want !== null || this.wantBack !== null || this.checking) return;
      if (!this.order.length) return;
      this.complete = false;
      this.go(this.order[this.order.length - 1]);
      return;
    }
    const prev = this.prevPosition(this.pos);
    if (prev === undefined) {
      // Before the stretch held: the server sends the slots served before this one.
      this.wantBack = this.pos;
      this.pos = null;
      this.showWait("Loading the previous pair…");
      this.send(this.wantBack, true);
    } else if (prev !== null) {
      this.go(prev);
    }
    this.el.reminder.hidden = true;
    this.notice("", "");
  }

  toggleUnclear() {
    if (this.pos === null || !this.scale.unclear_flag) return;
    this.unclearNow = !this.unclearNow;
    this.el.unclear.setAttribute("aria-pressed", this.unclearNow ? "true" : "false");
  }

  commentChanged() {
    const n = this.el.comment.value.length;
    const max = this.el.comment.maxLength;
    this.el.count.textContent = n > max * 0.8 ? `${n} / ${max} characters` : "";
  }

  renderReminder(pos) {
    let run = 0;
    let value = null;
    const k = this.rank.get(pos);
    for (let m = k === undefined ? -1 : k; m >= 0 && run < REMINDER_RUN; m--) {
      const pair = this.cache.get(this.order[m]);
      if (!pair || !pair.rated) break;
      if (value === null) value = pair.rating;
      if (pair.rating !== value) break;
      run++;
    }
    this.el.reminder.hidden = run < REMINDER_RUN;
  }

  destroy() {
    document.removeEventListener("keydown", this.onKey);
    if (this.paintTimer) cancelAnimationFrame(this.paintTimer);
    clearTimeout(this.timer);
    clearTimeout(this.resendTimer);
    clearTimeout(this.pollTimer);
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
