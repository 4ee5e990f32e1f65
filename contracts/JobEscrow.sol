// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IERC20Transfers {
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// @title Escrow of marketplace jobs paid in USDC, with delivery, review and refunds (shaped like ERC-8183).
/// @notice A buyer (the client) funds a job for a seller (the provider) with a delivery deadline and a review window.
///         The seller submits before the deadline; then the evaluator (the buyer unless another address was named)
///         completes the delivery (the seller is paid) or rejects it (the buyer is refunded) within the review window,
///         and silence past the window pays the seller. A job not delivered by its deadline is refunded to the buyer by
///         anyone's call. No hook or other party can block a refund or a payment that is due.
/// @dev Jobs are keyed by keccak256(abi.encode(client, jobId)), so one buyer's jobId never blocks another buyer's.
///      Each key is used once: a settled job keeps its record (and its status) forever.
contract JobEscrow {
    enum Status {
        None,
        Funded,
        Submitted,
        Completed,
        Rejected,
        Expired
    }

    struct Job {
        address client;
        address provider;
        address evaluator;
        uint96 budget;
        uint64 deliverBy;
        uint64 reviewWindow;
        uint64 submittedAt;
        Status status;
    }

    IERC20Transfers public immutable usdc;

    /// @notice Jobs by keyOf(client, jobId).
    mapping(bytes32 => Job) public jobs;

    event JobFunded(
        bytes32 indexed key,
        bytes32 indexed jobId,
        address indexed client,
        address provider,
        address evaluator,
        uint256 budget,
        uint64 deliverBy,
        uint64 reviewWindow,
        uint64 fundedAt
    );
    event JobSubmitted(bytes32 indexed key, bytes32 deliverable, uint64 submittedAt);
    event JobCompleted(bytes32 indexed key, bytes32 reason, bool bySilence);
    event JobRejected(bytes32 indexed key, address indexed rejector, bytes32 reason);
    event JobExpired(bytes32 indexed key);

    error ZeroAmount();
    error ZeroProvider();
    error DeadlinePassed();
    error AmountTooLarge();
    error KeyUsed();
    error UnknownJob();
    error WrongStatus(Status status);
    error NotProvider();
    error NotEvaluator();
    error ReviewOver();
    error ReviewNotOver();
    error NotExpired();
    error TransferFailed();

    constructor(IERC20Transfers usdc_) {
        usdc = usdc_;
    }

    /// @notice The storage key of a job: per buyer, so nobody can take another buyer's jobId first.
    function keyOf(address client, bytes32 jobId) public pure returns (bytes32) {
        return keccak256(abi.encode(client, jobId));
    }

    /// @notice Creates and funds a job in one call, pulling `budget` USDC (approved beforehand) from the caller.
    /// @param evaluator Who may complete or reject the delivery; address(0) means the buyer.
    /// @param deliverBy The delivery deadline (unix seconds); after it an undelivered job is refunded.
    /// @param reviewWindow Seconds the evaluator has after delivery; silence past them pays the seller.
    function fund(
        bytes32 jobId,
        address provider,
        address evaluator,
        uint256 budget,
        uint64 deliverBy,
        uint64 reviewWindow
    ) external {
        if (budget == 0) revert ZeroAmount();
        if (budget > type(uint96).max) revert AmountTooLarge();
        if (provider == address(0)) revert ZeroProvider();
        if (deliverBy <= block.timestamp) revert DeadlinePassed();
        bytes32 key = keyOf(msg.sender, jobId);
        if (jobs[key].status != Status.None) revert KeyUsed();
        address judge = evaluator == address(0) ? msg.sender : evaluator;
        jobs[key] = Job(msg.sender, provider, judge, uint96(budget), deliverBy, reviewWindow, 0, Status.Funded);
        emit JobFunded(key, jobId, msg.sender, provider, judge, budget, deliverBy, reviewWindow, uint64(block.timestamp));
        if (!usdc.transferFrom(msg.sender, address(this), budget)) revert TransferFailed();
    }

    /// @notice The seller delivers (a commitment to the result, e.g. a hash of its URL) before the deadline.
    function submit(bytes32 key, bytes32 deliverable) external {
        Job storage job = _job(key, Status.Funded);
        if (msg.sender != job.provider) revert NotProvider();
        if (block.timestamp >= job.deliverBy) revert DeadlinePassed();
        job.status = Status.Submitted;
        job.submittedAt = uint64(block.timestamp);
        emit JobSubmitted(key, deliverable, uint64(block.timestamp));
    }

    /// @notice The evaluator accepts the delivery within the review window: the seller is paid.
    function complete(bytes32 key, bytes32 reason) external {
        Job storage job = _job(key, Status.Submitted);
        if (msg.sender != job.evaluator) revert NotEvaluator();
        if (block.timestamp >= uint256(job.submittedAt) + job.reviewWindow) revert ReviewOver();
        job.status = Status.Completed;
        emit JobCompleted(key, reason, false);
        _pay(job.provider, job.budget);
    }

    /// @notice The evaluator rejects the delivery within the review window: the buyer is refunded. Unlike ERC-8183, a
    ///         job cannot be rejected before its delivery: a seller at work is not cancelled under it (an undelivered
    ///         job is refunded at its deadline).
    function reject(bytes32 key, bytes32 reason) external {
        Job storage job = _job(key, Status.Submitted);
        if (msg.sender != job.evaluator) revert NotEvaluator();
        if (block.timestamp >= uint256(job.submittedAt) + job.reviewWindow) revert ReviewOver();
        job.status = Status.Rejected;
        emit JobRejected(key, msg.sender, reason);
        _pay(job.client, job.budget);
    }

    /// @notice Anyone, once the deadline passed without a delivery: the buyer is refunded. Nothing can block it.
    function claimRefund(bytes32 key) external {
        Job storage job = _job(key, Status.Funded);
        if (block.timestamp < job.deliverBy) revert NotExpired();
        job.status = Status.Expired;
        emit JobExpired(key);
        _pay(job.client, job.budget);
    }

    /// @notice Anyone, once the review window passed in silence after a delivery: the seller is paid.
    function claimPayment(bytes32 key) external {
        Job storage job = _job(key, Status.Submitted);
        if (block.timestamp < uint256(job.submittedAt) + job.reviewWindow) revert ReviewNotOver();
        job.status = Status.Completed;
        emit JobCompleted(key, bytes32(0), true);
        _pay(job.provider, job.budget);
    }

    /// @dev The job under `key`, which must be in `status`.
    function _job(bytes32 key, Status status) private view returns (Job storage job) {
        job = jobs[key];
        if (job.status == Status.None) revert UnknownJob();
        if (job.status != status) revert WrongStatus(job.status);
    }

    /// @dev Called after the status is terminal (checks-effects-interactions); USDC returns true or reverts.
    function _pay(address to, uint256 amount) private {
        if (!usdc.transfer(to, amount)) revert TransferFailed();
    }
}
