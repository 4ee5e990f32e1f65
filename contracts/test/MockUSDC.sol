// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title A 6-decimal USDC stand-in for tests.
/// @dev Its runtime code is placed with anvil_setCode at the real Base USDC address, where no constructor runs:
///      nothing may live in immutables or constructor-initialized storage.
contract MockUSDC {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public totalSupply;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    error InsufficientBalance();
    error InsufficientAllowance();

    /// @notice Constant, not storage: no constructor runs at the setCode address.
    function name() external pure returns (string memory) {
        return "USD Coin";
    }

    /// @notice Constant, not storage: no constructor runs at the setCode address.
    function symbol() external pure returns (string memory) {
        return "USDC";
    }

    /// @notice USDC's real precision, so amounts in tests are base units as on Base.
    function decimals() external pure returns (uint8) {
        return 6;
    }

    /// @notice Open to anyone: tests fund accounts without an owner.
    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    /// @notice Reverts on insufficient balance, which tests use to mine a reverted transaction.
    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    /// @notice Sets the allowance outright, as USDC does.
    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    /// @notice An infinite (max) allowance is not spent down, as in USDC and most ERC-20s.
    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        if (allowed != type(uint256).max) {
            if (allowed < amount) revert InsufficientAllowance();
            allowance[from][msg.sender] = allowed - amount;
        }
        _move(from, to, amount);
        return true;
    }

    /// @dev Checked before subtracting so the revert has a named error instead of a panic.
    function _move(address from, address to, uint256 amount) private {
        uint256 balance = balanceOf[from];
        if (balance < amount) revert InsufficientBalance();
        unchecked {
            balanceOf[from] = balance - amount;
        }
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
