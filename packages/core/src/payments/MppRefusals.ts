import type { Errors as MppErrors } from 'mppx'

/**
 * mppx's refusals of a credential that does not pay its challenge, made from its loaded Errors (mppx is loaded on the
 * first paid request): its MismatchError (same name, title, problem type and words) and its "already used" error, so
 * a client sees the same 402 whichever of mppx's checks or ours refused it.
 */
export function paymentRefusals(Errors: typeof MppErrors) {
  /** mppx's refusal of a credential whose payment does not pay its challenge (its MismatchError, same words). */
  class MismatchError extends Errors.PaymentError {
    override name = 'MismatchError'
    readonly title = 'Verification Failed'
    readonly type = 'https://paymentauth.org/problems/verification-failed'
    constructor(message: string, details: Record<string, string>) {
      super(message, { details })
    }
  }
  return {
    /** The mismatch `reason`, with each detail on a line of its own, as mppx words it. */
    mismatch: (reason: string, details: Record<string, string> = {}) =>
      new MismatchError(
        [
          reason.startsWith('Payment verification failed')
            ? reason
            : `Payment verification failed: ${reason}`,
          ...Object.entries(details).map(([key, value]) => `  - ${key}: ${value}`),
        ].join('\n'),
        details,
      ),
    /** A transaction hash whose replay marker another request holds. */
    used: () => new Errors.VerificationFailedError({ reason: 'Transaction hash has already been used' }),
  }
}
