/** An argument that breaks the store's contract; nothing was written. */
export class InvalidArgument extends RangeError {
  readonly code = "invalid_request";
  constructor(message: string) {
    super(message);
    this.name = "InvalidArgument";
  }
}
