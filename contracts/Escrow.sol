// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

interface IERC20 {
    function transfer(address to, uint256 amount) external returns (bool);
    function transferFrom(address from, address to, uint256 amount) external returns (bool);
}

/// @title Escrow for marketplace tasks paid in USDC.
/// @notice A buyer deposits for a task; the buyer releases it to the seller, or the seller claims it after the SLA.
/// @dev Deposits are keyed by (buyer, taskId), so two buyers may use the same taskId. The contract does not make a
///      taskId unique: the marketplace enforces that one on-chain taskId pays only one task.
contract Escrow {
    struct Deposit {
        address seller;
        uint256 amount;
        uint256 slaDeadline;
    }

    IERC20 public immutable usdc;

    /// @notice Deposits by keccak256(abi.encode(buyer, taskId)); a settled deposit keeps its seller, amount 0.
    mapping(bytes32 => Deposit) public deposits;

    event Deposited(
        bytes32 indexed taskId, address indexed buyer, address indexed seller, uint256 amount, uint256 slaDeadline
    );
    event Released(bytes32 indexed taskId, address indexed buyer, address indexed seller, uint256 amount);
    event Claimed(bytes32 indexed taskId, address indexed buyer, address indexed seller, uint256 amount);

    error ZeroAmount();
    error ZeroSeller();
    error DuplicateDeposit();
    error UnknownDeposit();
    error AlreadySettled();
    error NotSeller();
    error SlaNotOver();
    error TransferFailed();

    constructor(IERC20 usdc_) {
        usdc = usdc_;
    }

    /// @notice The storage key of a deposit; per buyer, so one buyer cannot block another buyer's taskId.
    function keyOf(address buyer, bytes32 taskId) public pure returns (bytes32) {
        return keccak256(abi.encode(buyer, taskId));
    }

    /// @notice Pulls `amount` USDC (approved beforehand) from the buyer; a key is used once, even after settlement.
    function deposit(bytes32 taskId, address seller, uint256 amount, uint256 slaDeadline) external {
        if (amount == 0) revert ZeroAmount();
        if (seller == address(0)) revert ZeroSeller();
        bytes32 key = keyOf(msg.sender, taskId);
        if (deposits[key].seller != address(0)) revert DuplicateDeposit();
        deposits[key] = Deposit(seller, amount, slaDeadline);
        if (!usdc.transferFrom(msg.sender, address(this), amount)) revert TransferFailed();
        emit Deposited(taskId, msg.sender, seller, amount, slaDeadline);
    }

    /// @notice The buyer accepts the work early; only the buyer's own key can be released.
    function release(bytes32 taskId) external {
        (address seller, uint256 amount) = _settle(keyOf(msg.sender, taskId));
        emit Released(taskId, msg.sender, seller, amount);
        _pay(seller, amount);
    }

    /// @notice The seller is paid without the buyer once the SLA is over, so a silent buyer cannot hold funds.
    function claim(address buyer, bytes32 taskId) external {
        bytes32 key = keyOf(buyer, taskId);
        Deposit storage held = deposits[key];
        if (held.seller == address(0)) revert UnknownDeposit();
        if (held.seller != msg.sender) revert NotSeller();
        if (block.timestamp <= held.slaDeadline) revert SlaNotOver();
        (address seller, uint256 amount) = _settle(key);
        emit Claimed(taskId, buyer, seller, amount);
        _pay(seller, amount);
    }

    /// @dev Zeroes the amount before any transfer (checks-effects-interactions) and keeps the seller as a used mark.
    function _settle(bytes32 key) private returns (address seller, uint256 amount) {
        Deposit storage held = deposits[key];
        seller = held.seller;
        amount = held.amount;
        if (seller == address(0)) revert UnknownDeposit();
        if (amount == 0) revert AlreadySettled();
        held.amount = 0;
    }

    /// @dev USDC returns true or reverts; the check guards against a token that returns false instead.
    function _pay(address to, uint256 amount) private {
        if (!usdc.transfer(to, amount)) revert TransferFailed();
    }
}
