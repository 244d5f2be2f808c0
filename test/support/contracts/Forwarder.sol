// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Internal value transfers: each payment is a CALL frame carrying value (visible in a callTracer trace).
contract Forwarder {
    function forward(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "forward failed");
    }

    function split(address payable a, address payable b) external payable {
        uint256 half = msg.value / 2;
        (bool okA, ) = a.call{value: half}("");
        require(okA, "first failed");
        (bool okB, ) = b.call{value: msg.value - half}("");
        require(okB, "second failed");
    }
}
