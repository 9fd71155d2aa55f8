// A change that the domain rules refuse (an operator's partner or item change). The message speaks the
// API's words and starts with the field it concerns (partner_key, launch_url, item_id, ...); the admin
// CLI maps that field to its own flag.
export class ChangeRefused extends Error {
  override name = "ChangeRefused";
  /** The field the refusal concerns, as the API names it; undefined when it concerns no one field. */
  readonly field: string | undefined;

  constructor(field: string | undefined, message: string) {
    super(message);
    this.field = field;
  }
}
