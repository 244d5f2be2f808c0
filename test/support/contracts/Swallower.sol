// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Sends value and then reverts, so the whole frame (and its inner payment) is undone.
contract RevertingSender {
    function sendThenRevert(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "send failed");
        revert("swallowed");
    }
}

/// trySend succeeds, but the value-carrying frame to the RevertingSender fails and is caught: in a callTracer
/// trace that frame has value > 0 and error set (with the inner payment below it), while the receipt status is 1.
/// The value stays with this contract.
contract Swallower {
    RevertingSender public immutable child;

    event Swallowed(address indexed to, uint256 value);

    constructor() {
        child = new RevertingSender();
    }

    function trySend(address payable to) external payable {
        try child.sendThenRevert{value: msg.value}(to) {
            revert("unexpected success");
        } catch {
            emit Swallowed(to, msg.value);
        }
    }
}
