"""The TF1 program whose control dependencies ``tests/fixtures/tf1/control_dependencies.json``
records: ``make_control_fixtures.py`` runs it with TF's ``tf.compat.v1`` (offline), and
``tests/test_static_control_dependencies.py`` runs it with ``rustgrad.compat.v1`` and compares.
``build(tf)`` returns the ops whose control inputs are compared, by a short key.
"""


def build(tf):
    v = tf.Variable(1.0, name="v")
    set_v = tf.assign(v, 5.0, name="set_v")
    add_v = tf.assign_add(v, 1.0, name="add_v")
    x = tf.constant(2.0, name="x")
    ops = {}
    with tf.control_dependencies([set_v]):
        ops["const_inside"] = tf.constant(3.0, name="const_inside")
        ops["identity_of_outside"] = tf.identity(x, name="identity_of_outside")
        with tf.control_dependencies([set_v, add_v]):
            ops["nested"] = tf.constant(4.0, name="nested")
            ops["input_made_in_outer_block"] = tf.identity(ops["const_inside"], name="input_made_in_outer_block")
            ops["input_made_in_inner_block"] = tf.identity(ops["nested"], name="input_made_in_inner_block")
            with tf.control_dependencies(None):
                ops["cleared"] = tf.constant(5.0, name="cleared")
                with tf.control_dependencies([x]):
                    ops["after_clearing"] = tf.identity(ops["cleared"], name="after_clearing")
        ops["variable_initializer"] = tf.Variable(0.0, name="w").initializer
        ops["group_inside"] = tf.group(add_v, x, name="group_inside")
    with tf.control_dependencies([x]):
        ops["control_is_also_input"] = tf.add(x, 1.0, name="control_is_also_input")
    ops["group"] = tf.group(set_v, add_v)
    ops["group_of_nested"] = tf.group([set_v, [add_v]], {"x": x})
    ops["no_op"] = tf.no_op()
    first, second = tf.tuple([x, ops["const_inside"]])
    ops["tuple_first"], ops["tuple_second"] = first.op, second.op
    ops["tuple_gate"] = first.op.control_inputs[0]
    return {key: getattr(op, "op", op) for key, op in ops.items()}
