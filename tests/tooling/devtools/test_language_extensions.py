"""Spec: devtools.language_extensions expands a template as CloudFormation's AWS::LanguageExtensions
does. The first tests are the examples of CloudFormation's documentation, each template and the
template CloudFormation says it becomes (the Fn::ForEach examples of the Resources, Outputs and
Conditions sections: docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/
intrinsic-function-reference-foreach-example-resource.html, -example-outputs.html,
-example-conditions.html; the same in awsdocs/aws-cloudformation-user-guide), restated here. The
rest are what the transform leaves and the templates it refuses. template.yaml read through it:
tests/infrastructure/bundle/test_template_expansion.py."""

from __future__ import annotations

from typing import Any

import pytest

from devtools.language_extensions import LanguageExtensionsError, expand

NO_VALUE = {"Ref": "AWS::NoValue"}


def _template(**sections: Any) -> dict[str, Any]:
    return {"AWSTemplateFormatVersion": "2010-09-09", "Transform": "AWS::LanguageExtensions", **sections}


def _expanded(**sections: Any) -> dict[str, Any]:
    return {"AWSTemplateFormatVersion": "2010-09-09", **sections}


# -- CloudFormation's documented examples ------------------------------------------------------


def test_documented_replicate_an_sns_topic_per_item_with_the_identifier_in_a_sub() -> None:
    template = _template(
        Resources={
            "Fn::ForEach::Topics": [
                "TopicName",
                ["Success", "Failure", "Timeout", "Unknown"],
                {
                    "SnsTopic${TopicName}": {
                        "Type": "AWS::SNS::Topic",
                        "Properties": {"TopicName": {"Fn::Sub": "${TopicName}.fifo"}, "FifoTopic": True},
                    }
                },
            ]
        }
    )

    assert expand(template) == _expanded(
        Resources={
            f"SnsTopic{name}": {
                "Type": "AWS::SNS::Topic",
                "Properties": {"TopicName": f"{name}.fifo", "FifoTopic": True},
            }
            for name in ("Success", "Failure", "Timeout", "Unknown")
        }
    )


def test_documented_replicate_a_dynamodb_table_with_the_identifier_as_a_ref() -> None:
    table = {
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "ProvisionedThroughput": {"ReadCapacityUnits": "5", "WriteCapacityUnits": "5"},
    }
    template = _template(
        Resources={
            "Fn::ForEach::Tables": [
                "TableName",
                ["Points", "Score", "Name", "Leaderboard"],
                {
                    "DynamoDB${TableName}": {
                        "Type": "AWS::DynamoDB::Table",
                        "Properties": {"TableName": {"Ref": "TableName"}, **table},
                    }
                },
            ]
        }
    )

    assert expand(template)["Resources"] == {
        f"DynamoDB{name}": {"Type": "AWS::DynamoDB::Table", "Properties": {"TableName": name, **table}}
        for name in ("Points", "Score", "Name", "Leaderboard")
    }


def test_documented_replicate_two_resources_whose_condition_comes_from_a_mapping_or_is_left_out() -> None:
    condition = {"Fn::FindInMap": ["NatGateway", "Condition", {"Ref": "Identifier"}, {"DefaultValue": NO_VALUE}]}
    template = _template(
        Mappings={"NatGateway": {"Condition": {"B": "TwoNatGateways", "C": "ThreeNatGateways"}}},
        Resources={
            "Fn::ForEach::NatGatewayAndEIP": [
                "Identifier",
                ["A", "B", "C"],
                {
                    "NatGateway${Identifier}": {
                        "Type": "AWS::EC2::NatGateway",
                        "Properties": {
                            "AllocationId": {
                                "Fn::GetAtt": [{"Fn::Sub": "NatGatewayAttachment${Identifier}"}, "AllocationId"]
                            },
                            "SubnetId": {"Ref": {"Fn::Sub": "PublicSubnet${Identifier}"}},
                        },
                        "Condition": condition,
                    },
                    "NatGatewayAttachment${Identifier}": {
                        "Type": "AWS::EC2::EIP",
                        "Properties": {"Domain": "vpc"},
                        "Condition": condition,
                    },
                },
            ]
        },
    )
    conditions = {"A": None, "B": "TwoNatGateways", "C": "ThreeNatGateways"}

    resources = expand(template)["Resources"]

    for item, name in conditions.items():
        gateway = {
            "Type": "AWS::EC2::NatGateway",
            "Properties": {
                "AllocationId": {"Fn::GetAtt": [f"NatGatewayAttachment{item}", "AllocationId"]},
                "SubnetId": {"Ref": f"PublicSubnet{item}"},
            },
        }
        address = {"Type": "AWS::EC2::EIP", "Properties": {"Domain": "vpc"}}
        if name is not None:
            gateway["Condition"] = address["Condition"] = name
        assert resources[f"NatGateway{item}"] == gateway
        assert resources[f"NatGatewayAttachment{item}"] == address
    assert len(resources) == 6


def test_documented_nested_loops_name_resources_by_both_identifiers() -> None:
    template = _template(
        Resources={
            "VPC": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
            "Fn::ForEach::SubnetResources": [
                "Prefix",
                ["Transit", "Public"],
                {
                    "Nacl${Prefix}Subnet": {"Type": "AWS::EC2::NetworkAcl", "Properties": {"VpcId": {"Ref": "VPC"}}},
                    "Fn::ForEach::LoopInner": [
                        "Suffix",
                        ["A", "B", "C"],
                        {
                            "${Prefix}Subnet${Suffix}": {
                                "Type": "AWS::EC2::Subnet",
                                "Properties": {"VpcId": {"Ref": "VPC"}},
                            },
                            "Nacl${Prefix}Subnet${Suffix}Association": {
                                "Type": "AWS::EC2::SubnetNetworkAclAssociation",
                                "Properties": {
                                    "SubnetId": {"Ref": {"Fn::Sub": "${Prefix}Subnet${Suffix}"}},
                                    "NetworkAclId": {"Ref": {"Fn::Sub": "Nacl${Prefix}Subnet"}},
                                },
                            },
                        },
                    ],
                },
            ],
        }
    )

    resources = expand(template)["Resources"]

    assert len(resources) == 1 + 2 * (1 + 3 * 2)
    assert resources["NaclPublicSubnet"] == {"Type": "AWS::EC2::NetworkAcl", "Properties": {"VpcId": {"Ref": "VPC"}}}
    assert resources["NaclTransitSubnetBAssociation"]["Properties"] == {
        "SubnetId": {"Ref": "TransitSubnetB"},
        "NetworkAclId": {"Ref": "NaclTransitSubnet"},
    }
    assert resources["PublicSubnetC"] == {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "VPC"}}}


def test_documented_find_in_map_with_a_default_value_per_item() -> None:
    template = _template(
        Mappings={"Instances": {"InstanceType": {"B": "m5.4xlarge", "C": "c5.2xlarge"}, "ImageId": {"A": "ami-id1"}}},
        Resources={
            "Fn::ForEach::Instances": [
                "Identifier",
                ["A", "B", "C"],
                {
                    "Instance${Identifier}": {
                        "Type": "AWS::EC2::Instance",
                        "Properties": {
                            "InstanceType": {
                                "Fn::FindInMap": [
                                    "Instances",
                                    "InstanceType",
                                    {"Ref": "Identifier"},
                                    {"DefaultValue": "m5.xlarge"},
                                ]
                            },
                            "ImageId": {
                                "Fn::FindInMap": [
                                    "Instances",
                                    "ImageId",
                                    {"Ref": "Identifier"},
                                    {"DefaultValue": "ami-id-default"},
                                ]
                            },
                        },
                    }
                },
            ]
        },
        Outputs={"SecondInstanceId": {"Description": "Instance Id for InstanceB", "Value": {"Ref": "InstanceB"}}},
    )

    expanded = expand(template)

    assert {name: body["Properties"] for name, body in expanded["Resources"].items()} == {
        "InstanceA": {"InstanceType": "m5.xlarge", "ImageId": "ami-id1"},
        "InstanceB": {"InstanceType": "m5.4xlarge", "ImageId": "ami-id-default"},
        "InstanceC": {"InstanceType": "c5.2xlarge", "ImageId": "ami-id-default"},
    }
    assert expanded["Outputs"] == template["Outputs"]


def test_documented_loop_in_a_resources_properties_leaves_out_what_the_mapping_lacks() -> None:
    template = _template(
        Mappings={
            "InstanceA": {"Properties": {"ImageId": "ami-id1", "InstanceType": "m5.xlarge"}},
            "InstanceB": {"Properties": {"ImageId": "ami-id2"}},
            "InstanceC": {
                "Properties": {"ImageId": "ami-id3", "InstanceType": "m5.2xlarge", "AvailabilityZone": "us-east-1a"}
            },
        },
        Resources={
            "Fn::ForEach::Instances": [
                "InstanceLogicalId",
                ["InstanceA", "InstanceB", "InstanceC"],
                {
                    "${InstanceLogicalId}": {
                        "Type": "AWS::EC2::Instance",
                        "Properties": {
                            "DisableApiTermination": True,
                            "Fn::ForEach::Properties": [
                                "PropertyName",
                                ["ImageId", "InstanceType", "AvailabilityZone"],
                                {
                                    "${PropertyName}": {
                                        "Fn::FindInMap": [
                                            {"Ref": "InstanceLogicalId"},
                                            "Properties",
                                            {"Ref": "PropertyName"},
                                            {"DefaultValue": NO_VALUE},
                                        ]
                                    }
                                },
                            ],
                        },
                    }
                },
            ]
        },
    )

    assert {name: body["Properties"] for name, body in expand(template)["Resources"].items()} == {
        "InstanceA": {"DisableApiTermination": True, "ImageId": "ami-id1", "InstanceType": "m5.xlarge"},
        "InstanceB": {"DisableApiTermination": True, "ImageId": "ami-id2"},
        "InstanceC": {
            "DisableApiTermination": True,
            "ImageId": "ami-id3",
            "InstanceType": "m5.2xlarge",
            "AvailabilityZone": "us-east-1a",
        },
    }


def test_documented_nested_loops_in_outputs_get_attributes_of_each_copy() -> None:
    template = _template(
        Resources={
            "Fn::ForEach::Buckets": [
                "Identifier",
                ["A", "B", "C"],
                {
                    "S3Bucket${Identifier}": {
                        "Type": "AWS::S3::Bucket",
                        "Properties": {"MetricsConfigurations": [{"Id": {"Fn::Sub": "EntireBucket${Identifier}"}}]},
                        "DeletionPolicy": "Retain",
                    }
                },
            ]
        },
        Outputs={
            "Fn::ForEach::BucketOutputs": [
                "Identifier",
                ["A", "B", "C"],
                {
                    "Fn::ForEach::GetAttLoop": [
                        "Property",
                        ["Arn", "DomainName", "WebsiteURL"],
                        {
                            "S3Bucket${Identifier}${Property}": {
                                "Value": {"Fn::GetAtt": [{"Fn::Sub": "S3Bucket${Identifier}"}, {"Ref": "Property"}]}
                            }
                        },
                    ]
                },
            ]
        },
    )

    expanded = expand(template)

    assert expanded["Resources"]["S3BucketB"] == {
        "Type": "AWS::S3::Bucket",
        "Properties": {"MetricsConfigurations": [{"Id": "EntireBucketB"}]},
        "DeletionPolicy": "Retain",
    }
    assert expanded["Outputs"] == {
        f"S3Bucket{bucket}{attribute}": {"Value": {"Fn::GetAtt": [f"S3Bucket{bucket}", attribute]}}
        for bucket in ("A", "B", "C")
        for attribute in ("Arn", "DomainName", "WebsiteURL")
    }


def test_documented_conditions_replicated_with_a_ref_to_each_parameter() -> None:
    parameters = {f"Param{x}": {"Type": "String", "AllowedValues": ["true", "false"]} for x in "ABCD"}
    template = _template(
        Parameters=parameters,
        Conditions={
            "Fn::ForEach::CheckTrue": [
                "Identifier",
                ["A", "B", "C", "D"],
                {"IsParam${Identifier}Enabled": {"Fn::Equals": [{"Ref": {"Fn::Sub": "Param${Identifier}"}}, "true"]}},
            ]
        },
        Resources={"WaitConditionHandle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
    )

    assert expand(template) == _expanded(
        Parameters=parameters,
        Conditions={f"IsParam{x}Enabled": {"Fn::Equals": [{"Ref": f"Param{x}"}, "true"]} for x in "ABCD"},
        Resources={"WaitConditionHandle": {"Type": "AWS::CloudFormation::WaitConditionHandle"}},
    )


def test_documented_ampersand_strips_what_a_logical_id_cannot_hold() -> None:
    template = _template(
        Resources={
            "Fn::ForEach::Ingress": [
                "Cidr",
                ["10.0.2.0/24", "10.0.3.0/24"],
                {
                    "Ingress&{Cidr}": {
                        "Type": "AWS::EC2::SecurityGroupIngress",
                        "Properties": {"CidrIp": {"Ref": "Cidr"}, "Description": {"Fn::Sub": "from ${Cidr}"}},
                    }
                },
            ]
        }
    )

    assert expand(template)["Resources"] == {
        "Ingress1002024": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {"CidrIp": "10.0.2.0/24", "Description": "from 10.0.2.0/24"},
        },
        "Ingress1003024": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {"CidrIp": "10.0.3.0/24", "Description": "from 10.0.3.0/24"},
        },
    }


# -- what the transform leaves, and what it refuses ------------------------------------------------


def test_the_transform_is_removed_and_the_rest_of_the_list_kept_for_the_next_transform() -> None:
    template = {"Transform": ["AWS::LanguageExtensions", "AWS::Serverless-2016-10-31"], "Resources": {}}
    assert expand(template)["Transform"] == "AWS::Serverless-2016-10-31"
    assert "Transform" not in expand({"Transform": "AWS::LanguageExtensions", "Resources": {}})


def test_without_the_transform_nothing_is_expanded() -> None:
    loop = {"Fn::ForEach::Topics": ["Name", ["A"], {"Topic${Name}": {"Type": "AWS::SNS::Topic"}}]}
    template = {"Transform": "AWS::Serverless-2016-10-31", "Resources": loop}
    assert expand(template) == template


def test_a_sub_that_still_has_variables_stays_a_sub_with_the_identifier_replaced() -> None:
    template = _template(
        Resources={
            "Fn::ForEach::Logs": [
                "Name",
                ["Chat"],
                {
                    "${Name}Logs": {
                        "Type": "AWS::Logs::LogGroup",
                        "Properties": {
                            "LogGroupName": {"Fn::Sub": ["/aws/lambda/${F}", {"F": {"Ref": {"Fn::Sub": "${Name}Fn"}}}]},
                            "Tags": [{"Key": "stack", "Value": {"Fn::Sub": "${AWS::StackName}-${Name}"}}],
                        },
                    }
                },
            ]
        }
    )

    properties = expand(template)["Resources"]["ChatLogs"]["Properties"]

    assert properties["LogGroupName"] == {"Fn::Sub": ["/aws/lambda/${F}", {"F": {"Ref": "ChatFn"}}]}
    assert properties["Tags"] == [{"Key": "stack", "Value": {"Fn::Sub": "${AWS::StackName}-Chat"}}]


def test_a_find_in_map_known_only_at_deployment_is_left_to_cloudformation() -> None:
    find = {"Fn::FindInMap": ["Regions", {"Ref": "AWS::Region"}, "Ami"]}
    template = _template(
        Mappings={"Regions": {"us-east-1": {"Ami": "ami-1"}}},
        Resources={"I": {"Type": "AWS::EC2::Instance", "Properties": {"ImageId": find}}},
    )
    assert expand(template)["Resources"]["I"]["Properties"]["ImageId"] == find


def _one_loop(fragment: dict[str, Any], collection: list[Any] | None = None) -> dict[str, Any]:
    return _template(Resources={"Fn::ForEach::Loop": ["Name", collection or ["A", "B"], fragment]})


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        (_one_loop({"Topic": {"Type": "AWS::SNS::Topic"}}), r"must contain \$\{Name\}"),
        (
            _one_loop({"Topic${Name}": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": "${Name}"}}}),
            "plain string",
        ),
        (
            _one_loop(
                {"Topic${Name}": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": {"Fn::Sub": "&{Name}"}}}}
            ),
            "only in a key",
        ),
        (_one_loop({"Topic${Name}": {"Type": "AWS::SNS::Topic"}}, ["A", "A"]), "produced twice"),
        (_template(Resources={"Fn::ForEach::Loop": ["Name", {"Ref": "Names"}, {"T${Name}": {}}]}), "list of strings"),
        (_template(Resources={"Fn::ForEach::Loop": ["Name", ["A"]]}), r"takes \[Identifier"),
        (
            _template(Parameters={"Name": {"Type": "String"}}, Resources=_one_loop({"T${Name}": {}})["Resources"]),
            "also a parameter",
        ),
        (
            _one_loop({"T${Name}": {"Type": "AWS::SNS::Topic", "Properties": {"Tags": [{"Fn::ForEach::X": []}]}}}),
            "stands only in",
        ),
        (
            _one_loop({"T${Name}": {"Type": "AWS::SNS::Topic", "Properties": {"N": {"Fn::Length": [1, 2]}}}}),
            "Fn::Length is not expanded",
        ),
        (
            _template(
                Mappings={"M": {"A": {"X": "1"}}},
                Resources=_one_loop(
                    {
                        "T${Name}": {
                            "Type": "AWS::SNS::Topic",
                            "Properties": {"N": {"Fn::FindInMap": ["M", {"Ref": "Name"}, "X"]}},
                        }
                    }
                )["Resources"],
            ),
            "finds no M.B.X",
        ),
        (
            _template(
                Resources={
                    "Loop": {"Type": "AWS::SNS::Topic"},
                    "Fn::ForEach::Loop": ["Name", ["A"], {"T${Name}": {"Type": "AWS::SNS::Topic"}}],
                }
            ),
            "unique and no resource's logical ID",
        ),
    ],
    ids=[
        "an output key without the identifier",
        "the identifier in a plain string",
        "an ampersand outside a key",
        "a key produced twice",
        "a collection that is not a list",
        "a loop without its fragment",
        "an identifier that is a parameter's name",
        "a loop inside a property's value",
        "Fn::Length",
        "a mapping entry that does not exist",
        "a loop named like a resource",
    ],
)
def test_a_template_cloudformation_would_refuse_is_refused(template: dict[str, Any], reason: str) -> None:
    with pytest.raises(LanguageExtensionsError, match=reason):
        expand(template)


def test_loops_nest_five_deep_and_no_deeper() -> None:
    def nested(depth: int) -> dict[str, Any]:
        fragment: dict[str, Any] = {"R" + "".join(f"${{I{d}}}" for d in range(depth)): {"Type": "AWS::SNS::Topic"}}
        for level in reversed(range(depth)):
            fragment = {f"Fn::ForEach::L{level}": [f"I{level}", ["x"], fragment]}
        return _template(Resources=fragment)

    assert list(expand(nested(5))["Resources"]) == ["Rxxxxx"]
    with pytest.raises(LanguageExtensionsError, match="at most 5 deep"):
        expand(nested(6))
