/** A refusal of the HTTP layer itself (auth, size, media type), with its status and code. */
export class ApiError extends Error {
  readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413 | 503;
  readonly code: string;
  readonly headers: Record<string, string>;
  constructor(status: ApiError["status"], code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}
