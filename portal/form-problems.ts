// What is wrong with a form, said inside it where the person is looking: under each field concerned a
// message the field names with aria-describedby (and aria-invalid), and what concerns no field in one place
// beside the form's buttons (role=alert). The first field in error gets the focus and is scrolled into
// view, so pressing Save never seems to do nothing while the reason sits somewhere off screen.
import { h, replace } from "./dom.ts";

/** One thing to correct: the field it concerns (a key of the form's fields), or none for the whole form. */
export interface Problem {
  field?: string | undefined;
  message: string;
}

/**
 * A field as the form shows it: the block holding its label and control (its message goes at the block's
 * end), the control that is marked invalid and described by the message, and what gets the focus (the
 * control itself unless said otherwise: the first checkbox of a group).
 */
export interface ProblemField {
  block: HTMLElement;
  control: HTMLElement;
  focus?: HTMLElement | undefined;
}

export class FormProblems {
  /** Where problems that concern no field are said; the form places it beside its buttons. */
  readonly summary: HTMLElement;
  private readonly fields: Record<string, ProblemField>;
  private readonly prefix: string;

  constructor(prefix: string, fields: Record<string, ProblemField> = {}) {
    this.prefix = prefix;
    this.fields = fields;
    this.summary = h("div", { class: "form-problems", id: `${prefix}-problems`, role: "alert" });
  }

  /** Removes every message and mark (before the form is sent again). */
  clear(): void {
    replace(this.summary);
    for (const { block, control } of Object.values(this.fields)) {
      for (const message of block.querySelectorAll(":scope > .field-error")) message.remove();
      control.removeAttribute("aria-invalid");
      control.removeAttribute("aria-describedby");
    }
  }

  /** Says each problem beside its field (or in the summary), focuses the first field concerned and brings it into view. */
  show(problems: Problem[]): void {
    this.clear();
    const general: string[] = [];
    let first: ProblemField | undefined;
    for (const problem of problems) {
      const field = problem.field === undefined ? undefined : this.fields[problem.field];
      if (!field) {
        general.push(problem.message);
        continue;
      }
      const id = `${this.prefix}-${problem.field}-error`;
      const existing = field.block.querySelector<HTMLElement>(`#${CSS.escape(id)}`);
      if (existing) existing.append(" ", problem.message);
      else field.block.append(h("p", { class: "field-error", id }, problem.message));
      field.control.setAttribute("aria-invalid", "true");
      field.control.setAttribute("aria-describedby", id);
      first ??= field;
    }
    if (general.length > 0) replace(this.summary, h("p", {}, general.join(" ")));
    if (first) {
      (first.focus ?? first.control).focus({ preventScroll: true });
      first.block.scrollIntoView({ block: "nearest" });
    } else this.summary.scrollIntoView({ block: "nearest" });
  }
}
