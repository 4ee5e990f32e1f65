// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice What a smart-contract wallet answers for a signature it accepts (ERC-1271).
interface IERC1271 {
    function isValidSignature(bytes32 hash, bytes memory signature) external view returns (bytes4);
}

/// @title A 6-decimal USDC stand-in for tests, with USDC's EIP-3009 transfers by signed authorization.
/// @dev Its runtime code is placed with anvil_setCode at the real Base USDC address, where no constructor runs:
///      nothing may live in immutables or constructor-initialized storage, so the EIP-712 domain is computed per call.
contract MockUSDC {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public totalSupply;
    /// @dev EIP-3009: each authorizer's nonces, used or cancelled.
    mapping(address => mapping(bytes32 => bool)) private _authorizations;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce);


    bytes32 public constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant RECEIVE_WITH_AUTHORIZATION_TYPEHASH = keccak256(
        "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
    );
    bytes32 public constant CANCEL_AUTHORIZATION_TYPEHASH =
        keccak256("CancelAuthorization(address authorizer,bytes32 nonce)");

    /// @notice Constant, not storage: no constructor runs at the setCode address.
    function name() external pure returns (string memory) {
        return "USD Coin";
    }

    /// @notice Constant, not storage: no constructor runs at the setCode address.
    function symbol() external pure returns (string memory) {
        return "USDC";
    }

    /// @notice The EIP-712 domain version of USDC on Base (FiatToken v2).
    function version() external pure returns (string memory) {
        return "2";
    }

    /// @notice USDC's EIP-712 domain: name "USD Coin", version "2", this chain, this address.
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(
            abi.encode(
                keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"),
                keccak256("USD Coin"),
                keccak256("2"),
                block.chainid,
                address(this)
            )
        );
    }

    /// @notice EIP-3009: whether `authorizer` has used or cancelled `nonce`.
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool) {
        return _authorizations[authorizer][nonce];
    }

    /// @notice EIP-3009: moves `value` from `from` to `to` on `from`'s signature (v, r, s), once per nonce, in its window.
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v)
        );
    }

    /// @notice EIP-3009 as USDC v2.2 also takes it: one signature of 65 bytes, or any a smart wallet accepts (ERC-1271).
    function transferWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) external {
        _transferWithAuthorization(
            TRANSFER_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, signature
        );
    }

    /// @notice EIP-3009: as transferWithAuthorization, but only the payee may submit it (no front-running a deposit).
    function receiveWithAuthorization(
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external {
        require(to == msg.sender, "FiatTokenV2: caller must be the payee");
        _transferWithAuthorization(
            RECEIVE_WITH_AUTHORIZATION_TYPEHASH, from, to, value, validAfter, validBefore, nonce, abi.encodePacked(r, s, v)
        );
    }

    /// @notice EIP-3009: the authorizer gives up an unused nonce.
    function cancelAuthorization(address authorizer, bytes32 nonce, uint8 v, bytes32 r, bytes32 s) external {
        require(!_authorizations[authorizer][nonce], "FiatTokenV2: authorization is used or canceled");
        bytes32 digest = _digest(keccak256(abi.encode(CANCEL_AUTHORIZATION_TYPEHASH, authorizer, nonce)));
        require(_validSignature(authorizer, digest, abi.encodePacked(r, s, v)), "FiatTokenV2: invalid signature");
        _authorizations[authorizer][nonce] = true;
        emit AuthorizationCanceled(authorizer, nonce);
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
            require(allowed >= amount, "ERC20: transfer amount exceeds allowance");
            allowance[from][msg.sender] = allowed - amount;
        }
        _move(from, to, amount);
        return true;
    }

    function _transferWithAuthorization(
        bytes32 typehash,
        address from,
        address to,
        uint256 value,
        uint256 validAfter,
        uint256 validBefore,
        bytes32 nonce,
        bytes memory signature
    ) private {
        require(block.timestamp > validAfter, "FiatTokenV2: authorization is not yet valid");
        require(block.timestamp < validBefore, "FiatTokenV2: authorization is expired");
        require(!_authorizations[from][nonce], "FiatTokenV2: authorization is used or canceled");
        bytes32 digest =
            _digest(keccak256(abi.encode(typehash, from, to, value, validAfter, validBefore, nonce)));
        require(_validSignature(from, digest, signature), "FiatTokenV2: invalid signature");
        _authorizations[from][nonce] = true;
        emit AuthorizationUsed(from, nonce);
        _move(from, to, value);
    }

    function _digest(bytes32 structHash) private view returns (bytes32) {
        return keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
    }

    /// @dev A contract signer answers by ERC-1271; otherwise ECDSA with USDC's checks (low s, v 27/28, no zero signer).
    function _validSignature(address signer, bytes32 digest, bytes memory signature) private view returns (bool) {
        if (signer.code.length > 0) {
            (bool ok, bytes memory answer) =
                signer.staticcall(abi.encodeCall(IERC1271.isValidSignature, (digest, signature)));
            return ok && answer.length >= 32 && abi.decode(answer, (bytes4)) == IERC1271.isValidSignature.selector;
        }
        if (signature.length != 65) return false;
        bytes32 r;
        bytes32 s;
        uint8 v;
        assembly {
            r := mload(add(signature, 0x20))
            s := mload(add(signature, 0x40))
            v := byte(0, mload(add(signature, 0x60)))
        }
        if (uint256(s) > 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0) return false;
        if (v != 27 && v != 28) return false;
        address recovered = ecrecover(digest, v, r, s);
        return recovered != address(0) && recovered == signer;
    }

    /// @dev Checked before subtracting so the revert carries USDC's own reason instead of a panic.
    function _move(address from, address to, uint256 amount) private {
        uint256 balance = balanceOf[from];
        require(balance >= amount, "ERC20: transfer amount exceeds balance");
        unchecked {
            balanceOf[from] = balance - amount;
        }
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
