// A tiny element builder: text is always set as text (never parsed as HTML), so nothing the API returns
// can inject markup or script.
type Child = Node | string | number | false | null | undefined;
type Attributes = Record<string, string | boolean | number | EventListener | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue;
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, ""), value);
    else if (value === true) element.setAttribute(name, "");
    else element.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

export function replace(target: Element, ...children: (Child | Child[])[]): void {
  target.replaceChildren();
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    target.append(child instanceof Node ? child : String(child));
  }
}

/** An RFC 3339 timestamp in the reader's locale, with the UTC value as a tooltip. */
export function time(iso: string | null | undefined): HTMLElement | string {
  if (!iso) return "—";
  const date = new Date(iso);
  return h("time", { datetime: iso, title: iso }, date.toLocaleString());
}

// The bidirectional controls (Unicode's Bidi_Control: ALM, LRM, RLM, the embeddings and overrides U+202A–U+202E,
// the isolates U+2066–U+2069): set as text they still reorder what follows them ("\u202Egnp.exe" reads
// "exe.png"), so text from outside the service would read other than it is.
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** `text` with every bidirectional control shown as its escape (`\u202E`) instead of acting on what follows. */
export function visibleBidi(text: string): string {
  return text.replace(
    BIDI_CONTROLS,
    (control) => `\\u${(control.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`,
  );
}
