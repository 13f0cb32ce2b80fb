// The adjudication widget. Its messages are one contract, data_schemas/adjudicator_widget.py:
// the page mounts it with an AdjudicatorData {pair, reasons, position, total, status, fresh}
// (pair: an AdjudicationPair {pair_id, term_1, term_2, auto_label, model_label,
// model_posterior, majority, raters [{annotator, rating, unclear, seconds, comment, slot}],
// needs, version, decision, history, options}; reasons: [{value, key, label}]; labels: the
// scale's label of each value; need_labels: each need's plain name; decided of needed: the
// counter; texts: every word it shows, an AdjudicatorTexts — this file writes no text of
// its own, the elements marked data-text / data-label get theirs from it), and the state
// it sends back is an AdjudicatorState: `decision`, a DecisionEvent {pair_id, label, reason,
// reason_text, flag_guideline, version, seq} on Enter, and `nav`, a NavEvent
// {to: "next" | "prev", seq} on n / p. The page reads that state through the contract.
// Keys: 1-9 label, a reason's letter, f flag, Enter save, n / p next / previous pair; in the
// text field Esc leaves it and Enter saves.
const INSTANCES = new WeakMap();

class Adjudicator {
  constructor(root) {
    this.root = root;
    const q = (sel) => root.querySelector(sel);
    this.el = {
      head: q(".adj-head"), t1: q(".adj-term[data-testid=adj-term-1]"),
      t2: q(".adj-term[data-testid=adj-term-2]"), facts: q(".adj-facts"),
      raters: q(".adj-raters tbody"), current: q(".adj-current"), options: q(".adj-options"),
      reasons: q(".adj-reasons"), text: q(".adj-text"), flag: q(".adj-flag"),
      status: q(".adj-status"), empty: q(".adj-empty"), counter: q(".adj-counter"),
      needs: q(".adj-needs"),
    };
    this.seq = 0;
    this.label = null;
    this.reason = null;
    this.flag = false;
    this.pairId = null;
    this.onKey = (ev) => this.key(ev);
    document.addEventListener("keydown", this.onKey);
    this.el.flag.addEventListener("click", () => this.toggleFlag());
  }

  receive(data, setStateValue) {
    this.setStateValue = setStateValue;
    this.data = data;
    const texts = data.texts || {};
    this.texts = texts;
    for (const e of this.root.querySelectorAll("[data-text]")) e.textContent = texts[e.dataset.text] || "";
    for (const e of this.root.querySelectorAll("[data-label]")) e.setAttribute("aria-label", texts[e.dataset.label] || "");
    const pair = data.pair;
    this.el.empty.hidden = !!pair;
    this.el.counter.textContent = texts.counter || "";
    if (!pair) {
      this.el.head.textContent = "";
      this.el.needs.textContent = "";
      this.pairId = null;
      this.el.status.textContent = data.status || "";
      return;
    }
    if (pair.pair_id !== this.pairId || data.fresh) {
      this.pairId = pair.pair_id;
      const d = pair.decision;
      this.label = d ? String(d.label) : null;
      this.reason = d ? d.reason : null;
      this.flag = d ? !!d.flag_guideline : false;
      this.el.text.value = d ? d.reason_text || "" : "";
    }
    this.version = pair.version;
    this.el.head.textContent = texts.head || "";
    this.el.needs.textContent = texts.needs || "";
    this.el.t1.textContent = pair.term_1;
    this.el.t2.textContent = pair.term_2;
    const show = (v) => (v === null || v === undefined ? v : (data.labels || {})[String(v)] ?? String(v));
    this.el.facts.textContent = texts.facts || "";
    this.el.raters.replaceChildren(...pair.raters.map((r) => {
      const tr = document.createElement("tr");
      for (const v of [r.annotator, show(r.rating), r.unclear ? texts.yes || "" : "", r.seconds ?? "", r.comment]) {
        const td = document.createElement("td");
        td.textContent = String(v);
        tr.appendChild(td);
      }
      return tr;
    }));
    const d = pair.decision;
    this.el.current.textContent = texts.current || "";
    this.el.options.replaceChildren(...pair.options.map((o, i) => this.button(`${show(o)} `, i + 1, () => this.setLabel(String(o)), "label", String(o))));
    this.el.reasons.replaceChildren(...data.reasons.map((r) => this.button(`${r.label} `, r.key, () => this.setReason(r.value), "reason", r.value)));
    this.el.flag.setAttribute("aria-pressed", String(this.flag));
    this.el.status.textContent = data.status || "";
    this.paint();
  }

  button(text, key, onClick, kind, value) {
    const b = document.createElement("button");
    b.type = "button";
    b.setAttribute("role", "radio");
    b.dataset.kind = kind;
    b.dataset.value = value;
    b.dataset.testid = `adj-${kind}-${value}`;
    b.setAttribute("data-testid", `adj-${kind}-${value}`);
    b.append(text);
    const k = document.createElement("kbd");
    k.textContent = String(key);
    b.appendChild(k);
    b.addEventListener("click", onClick);
    return b;
  }

  paint() {
    for (const b of this.el.options.children) b.setAttribute("aria-checked", String(b.dataset.value === this.label));
    for (const b of this.el.reasons.children) b.setAttribute("aria-checked", String(b.dataset.value === this.reason));
    this.el.flag.setAttribute("aria-pressed", String(this.flag));
  }

  setLabel(v) { this.label = v; this.paint(); }

  setReason(v) {
    this.reason = v;
    this.paint();
    if (v === "other") this.el.text.focus();
  }

  toggleFlag() { this.flag = !this.flag; this.paint(); }

  send(name, value) {
    this.seq += 1;
    if (this.setStateValue) this.setStateValue(name, { ...value, seq: `${Date.now()}-${this.seq}` });
  }

  save() {
    if (!this.pairId) return;
    const texts = this.texts || {};
    if (this.label === null) { this.el.status.textContent = texts.label_first || ""; return; }
    if (!this.reason) { this.el.status.textContent = texts.reason_first || ""; return; }
    if (this.reason === "other" && !this.el.text.value.trim()) {
      this.el.status.textContent = texts.other_text || "";
      this.el.text.focus();
      return;
    }
    this.el.status.textContent = texts.saving || "";
    this.send("decision", {
      pair_id: this.pairId, label: this.label, reason: this.reason,
      reason_text: this.el.text.value, flag_guideline: this.flag, version: this.version,
    });
  }

  key(ev) {
    if (!this.root.isConnected || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const inText = ev.target === this.el.text;
    if (inText) {
      if (ev.key === "Escape") { this.el.text.blur(); ev.preventDefault(); }
      else if (ev.key === "Enter") { this.el.text.blur(); this.save(); ev.preventDefault(); }
      return;
    }
    const tag = (ev.target && ev.target.tagName) || "";
    if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || (ev.target && ev.target.isContentEditable)) return;
    if (!this.data) return;
    const k = ev.key;
    if (k === "Enter") { this.save(); ev.preventDefault(); return; }
    if (k === "n" || k === "ArrowRight") { this.send("nav", { to: "next" }); ev.preventDefault(); return; }
    if (k === "p" || k === "ArrowLeft") { this.send("nav", { to: "prev" }); ev.preventDefault(); return; }
    if (!this.pairId) return;
    if (k === "f") { this.toggleFlag(); ev.preventDefault(); return; }
    if (/^[1-9]$/.test(k)) {
      const o = this.data.pair.options[Number(k) - 1];
      if (o !== undefined) { this.setLabel(String(o)); ev.preventDefault(); }
      return;
    }
    const r = this.data.reasons.find((x) => x.key === k);
    if (r) { this.setReason(r.value); ev.preventDefault(); }
  }

  destroy() { document.removeEventListener("keydown", this.onKey); }
}

export default function (component) {
  const { parentElement, data, setStateValue } = component;
  let inst = INSTANCES.get(parentElement);
  if (!inst || !parentElement.contains(inst.el.t1)) {
    if (inst) inst.destroy();
    inst = new Adjudicator(parentElement);
    INSTANCES.set(parentElement, inst);
  }
  inst.receive(data, setStateValue);
  return () => {
    inst.destroy();
    INSTANCES.delete(parentElement);
  };
}
